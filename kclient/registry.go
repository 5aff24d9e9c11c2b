package kclient

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/topology"
)

// RegistryClient is the schema registry client of the registry-backed
// inputs (franz-go's sr.Client): the section's URL, basic auth when a
// username is set, and its TLS (CA, client certificate) on an https URL.
func RegistryClient(s topology.SchemaRegistry) (*sr.Client, error) {
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
