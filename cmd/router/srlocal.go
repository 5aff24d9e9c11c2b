package main

import (
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sidestream/sidestream/internal/config"
)

// localRegistry is the in-process schema registry of router demo and
// router test: franz-go's srfake, serving HTTP on 127.0.0.1 (a free
// port), with the writer schemas of the registry-backed inputs registered
// before the router starts. The router is pointed at its URL as at any
// registry; the file's schema_registry settings do not apply.
type localRegistry struct {
	*srfake.Registry
	ids   map[string]int    // the registered schema's id, by subject
	texts map[string]string // its text, by subject
}

// localSchema is one schema to register: a file's text under a subject.
type localSchema struct {
	subject string
	path    string
	typ     sr.SchemaType
}

// inputSchemaType is the registry's schema type of a registry-backed
// input format (false: not registry-backed).
func inputSchemaType(f string) (sr.SchemaType, bool) {
	switch f {
	case config.InputAvro:
		return sr.TypeAvro, true
	case config.InputProtobuf:
		return sr.TypeProtobuf, true
	case config.InputJSONSchema:
		return sr.TypeJSON, true
	}
	return 0, false
}

// startLocalRegistry starts the registry and registers each schema file
// under its subject. The caller closes it.
func startLocalRegistry(schemas []localSchema) (*localRegistry, error) {
	r := &localRegistry{Registry: srfake.New(), ids: map[string]int{}, texts: map[string]string{}}
	for _, s := range schemas {
		text, err := os.ReadFile(s.path)
		if err != nil {
			r.Close()
			return nil, err
		}
		id, _, err := r.RegisterSchema(s.subject, sr.Schema{Schema: string(text), Type: s.typ})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("register %s under %s: %w", s.path, s.subject, err)
		}
		r.ids[s.subject], r.texts[s.subject] = id, string(text)
	}
	return r, nil
}
