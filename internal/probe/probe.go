package probe

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sidestream/sidestream/internal/cliexit"
)

// Options are a probe's settings.
type Options struct {
	Timeout    time.Duration // give up after this long; 0: one attempt
	Interval   time.Duration // wait between attempts
	CAFile     string        // PEM CA bundle for an https URL ("": the system roots)
	ServerName string        // the name the server's certificate must carry ("": the URL's host)
}

// Run GETs url until it answers 2xx (its status line on stdout) or the
// timeout passes (the last failure is the error); each failed attempt is
// a line on stderr. A url that is not http:// or https:// is a usage
// error.
func Run(ctx context.Context, url string, o Options, stdout, stderr io.Writer) error {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return cliexit.Usage("router probe: want one http:// or https:// URL")
	}
	client, err := probeClient(o.CAFile, o.ServerName)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(o.Timeout)
	for {
		status, err := probeOnce(ctx, client, url)
		if err == nil {
			fmt.Fprintf(stdout, "%s: %s\n", url, status)
			return nil
		}
		if !time.Now().Add(o.Interval).Before(deadline) {
			return fmt.Errorf("%s: %w", url, err)
		}
		fmt.Fprintf(stderr, "%s: %v; trying again\n", url, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", url, ctx.Err())
		case <-time.After(o.Interval):
		}
	}
}

func probeClient(caFile, serverName string) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}

// probeOnce is one GET: the status line on 2xx, else an error with the
// status and the first line of the body (/readyz says why it is not ready).
func probeOnce(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	if resp.StatusCode/100 == 2 {
		return resp.Status, nil
	}
	return "", errors.New(strings.TrimSpace(resp.Status + " " + line))
}
