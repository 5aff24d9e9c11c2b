package kclient

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/registry"
)

// RegistryClient is the schema registry client of the registry-backed
// inputs (franz-go's sr.Client): the section's URL, basic auth when a
// username is set, and its TLS (CA, client certificate) on an https URL.
func RegistryClient(s config.SchemaRegistry) (*sr.Client, error) {
	o := []sr.ClientOpt{sr.URLs(s.URL), sr.UserAgent("sidestream")}
	if s.Username != "" {
		o = append(o, sr.BasicAuth(s.Username, s.Password.Reveal()))
	}
	if t := s.TLS; t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" {
		tc, err := TLSConfig(t.ClientTLS())
		if err != nil {
			return nil, fmt.Errorf("schema_registry.tls: %w", err)
		}
		o = append(o, sr.DialTLSConfig(tc))
	}
	cl, err := sr.NewClient(o...)
	if err != nil {
		return nil, fmt.Errorf("schema registry client: %w", err)
	}
	return cl, nil
}

// RegistryOpts are the schema cache's settings from the section:
// fetch_timeout and unknown_id_ttl (their defaults when unset).
func RegistryOpts(s config.SchemaRegistry) []registry.Opt {
	return []registry.Opt{registry.WithFetchTimeout(s.FetchTimeoutOrDefault()), registry.WithUnknownTTL(s.UnknownIDTTLOrDefault())}
}

// RegistryDecoders builds the decoders of a topology's registry-backed
// inputs (avro, protobuf, json_schema), by input topic: one registry
// client and one schema cache shared by all of them. None when no input
// is registry-backed.
func RegistryDecoders(t *plan.Plan, hooks registry.Hooks) (map[string]*registry.Decoder, error) {
	formats := map[string]string{}
	for _, in := range t.Inputs {
		formats[in.Topic] = in.Format
	}
	return registryDecoders(t, hooks, formats)
}

// TableDecoders builds the decoders of a topology's registry-backed
// lookup tables, by table name, as RegistryDecoders does the inputs'
// (a client and a cache of their own). None when no table is.
func TableDecoders(t *plan.Plan, hooks registry.Hooks) (map[string]*registry.Decoder, error) {
	formats := map[string]string{}
	for _, tb := range t.Tables {
		formats[tb.Name] = tb.Format
	}
	return registryDecoders(t, hooks, formats)
}

// registryDecoders builds a decoder for each name whose format is a
// registry format, over one client and cache made on the first.
func registryDecoders(t *plan.Plan, hooks registry.Hooks, formats map[string]string) (map[string]*registry.Decoder, error) {
	var reg *registry.Registry
	decs := map[string]*registry.Decoder{}
	for name, format := range formats {
		if !config.RegistryFormat(format) {
			continue
		}
		if reg == nil {
			cl, err := RegistryClient(t.Settings.SchemaRegistry)
			if err != nil {
				return nil, err
			}
			if reg, err = registry.New(cl, append(RegistryOpts(t.Settings.SchemaRegistry), registry.WithHooks(hooks))...); err != nil {
				return nil, err
			}
		}
		d, err := registry.NewDecoder(reg, registry.Format(format))
		if err != nil {
			return nil, err
		}
		decs[name] = d
	}
	return decs, nil
}

// RegistrationRefused reports whether a schema registration failed
// because the registry refused it (a 4xx answer: an incompatible schema,
// 409; an invalid one, 422; no such path or no permission), which a retry
// does not heal, rather than because it could not answer (unreachable, a
// timeout, 408, 429, 5xx), which it may. The answer is returned to name
// the refusal.
func RegistrationRefused(err error) (*sr.ResponseError, bool) {
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		return nil, false
	}
	s := re.StatusCode
	refused := s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests
	return re, refused
}
