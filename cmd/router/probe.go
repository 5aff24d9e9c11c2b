package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// cmdProbe is `router probe URL`: GET the URL until it answers 2xx or the
// timeout passes. The image has no shell and no wget, so the chart's
// `helm test` hook (and a container HEALTHCHECK) runs the router itself.
func cmdProbe(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long; 0: one attempt")
	interval := fs.Duration("interval", time.Second, "wait between attempts")
	caFile := fs.String("ca-file", "", "PEM CA bundle for an https URL (default: the system roots)")
	serverName := fs.String("server-name", "", "the name the server's certificate must carry (default: the URL's host)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: router probe [--timeout 60s] [--ca-file FILE] URL  (exit 0 once URL answers 2xx)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitError{code: 2}
	}
	if fs.NArg() != 1 || !(strings.HasPrefix(fs.Arg(0), "http://") || strings.HasPrefix(fs.Arg(0), "https://")) {
		return exitError{code: 2, msg: "router probe: want one http:// or https:// URL"}
	}
	client, err := probeClient(*caFile, *serverName)
	if err != nil {
		return err
	}
	url := fs.Arg(0)
	deadline := time.Now().Add(*timeout)
	for {
		status, err := probeOnce(client, url)
		if err == nil {
			fmt.Fprintf(stdout, "%s: %s\n", url, status)
			return nil
		}
		if !time.Now().Add(*interval).Before(deadline) {
			return fmt.Errorf("%s: %w", url, err)
		}
		fmt.Fprintf(stderr, "%s: %v; trying again\n", url, err)
		time.Sleep(*interval)
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
func probeOnce(client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
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
