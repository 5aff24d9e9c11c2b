package serve

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/sidestream/sidestream/internal/api"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/redact"
	"github.com/sidestream/sidestream/internal/runtime"
	"github.com/sidestream/sidestream/internal/stagetwo"
)

// apiSecurity turns the api section into the API's guard and, when it
// listens on TLS, its tls.Config. Reload failures are logged once per
// distinct error.
func apiSecurity(a config.API, log *slog.Logger) (api.Auth, *tls.Config, error) {
	log = log.With("component", "api")
	onErr := onceEach(func(err error) {
		log.Warn("an API credential file changed but could not be used; the last good one stays in force", "err", err)
	})
	auth := api.Auth{Mode: api.AuthMode(a.Auth), ProtectMetrics: a.ProtectMetrics(), Denied: func(reason string) {
		log.Debug("API request refused", "reason", reason)
	}}
	if a.Auth == config.APIAuthBearer {
		toks, err := api.NewTokens(a.TokenFile, config.SplitTokens(a.Tokens.Reveal()), onErr)
		if err != nil {
			return api.Auth{}, nil, fmt.Errorf("api.auth: bearer: %w", err)
		}
		auth.Tokens = toks
	}
	if !a.TLS.Enabled() {
		return auth, nil, nil
	}
	tc, err := api.TLSConfig(api.TLSFiles{CertFile: a.TLS.CertFile, KeyFile: a.TLS.KeyFile, ClientCAFile: a.TLS.ClientCAFile}, onErr)
	if err != nil {
		return api.Auth{}, nil, fmt.Errorf("api.tls: %w", err)
	}
	return auth, tc, nil
}

// onceEach calls f for an error whose text differs from the last one's:
// a broken file is retried at every request without flooding the log.
func onceEach(f func(error)) func(error) {
	var mu sync.Mutex
	last := ""
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err.Error() != last {
			last = err.Error()
			f(err)
		}
	}
}

// apiWarnings logs the API settings that work but leave a door open.
func apiWarnings(log *slog.Logger, a config.API, addr net.Addr) {
	if loopback(addr) {
		return
	}
	switch {
	case a.Auth == config.APIAuthNone:
		log.Warn("the HTTP API answers anyone who reaches "+addr.String()+" (api.auth: none): /state, /tasks, /topology and the samples of /ui are open; set api.auth: bearer or mtls, or listen on 127.0.0.1", "api", addr.String())
	case a.Auth == config.APIAuthBearer && !a.TLS.Enabled():
		log.Warn("bearer tokens travel in clear text (api.auth: bearer without api.tls): set api.tls.cert_file and key_file unless a mesh encrypts the traffic", "api", addr.String())
	}
	if a.Samples == config.SamplesFull && a.Auth == config.APIAuthNone {
		log.Warn("/ui shows whole records of the dirty and late routes to anyone (api.samples: full); consider api.samples: redacted or off", "api", addr.String())
	}
}

func loopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// redactedState applies api.samples to the record values a state query
// returns: an assembly's part values, a window's results.
type redactedState struct {
	r    stagetwo.StateReader
	mode string
	red  *redact.Redactor
}

func (s redactedState) ReadState(ctx context.Context, key string) (any, error) {
	v, err := s.r.ReadState(ctx, key)
	if err != nil || s.mode == config.SamplesFull {
		return v, err
	}
	switch t := v.(type) {
	case *stagetwo.WindowStateView:
		c := *t
		c.Windows = make([]json.RawMessage, len(t.Windows))
		for i, w := range t.Windows {
			c.Windows[i] = s.value(w)
		}
		return &c, nil
	case *stagetwo.AssemblyStateView:
		c := *t
		c.Parts = append(c.Parts[:0:0], t.Parts...)
		for i := range c.Parts {
			c.Parts[i].Value = s.value(c.Parts[i].Value)
		}
		return &c, nil
	}
	// A view this wrapper does not know: nothing of it is shown.
	return nil, fmt.Errorf("state of this operator is withheld under api.samples: %s", s.mode)
}

// value is one record value under the mode: masked, or "***" whole.
func (s redactedState) value(b json.RawMessage) json.RawMessage {
	if s.mode == config.SamplesRedacted {
		if out, _, ok := s.red.JSON(b); ok {
			return out
		}
	}
	q, _ := json.Marshal(redact.Mask)
	return q
}

// stateReadersFor registers every stateful operator for GET
// /state/{operator}, under api.samples.
func stateReadersFor(p *runtime.Processor, a config.API) map[string]api.StateReader {
	out := map[string]api.StateReader{}
	for name, r := range p.StateReaders() {
		out[name] = redactedState{r: r, mode: a.Samples, red: redact.New(a.Redact)}
	}
	return out
}
