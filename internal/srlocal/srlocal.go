// Package srlocal is the in-process schema registry of router demo and
// router test: franz-go's srfake, serving HTTP on 127.0.0.1 (a free
// port), with the writer schemas of the registry-backed inputs registered
// before the router starts. The router is pointed at its URL as at any
// registry; the file's schema_registry settings do not apply.
package srlocal

import (
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sidestream/sidestream/internal/config"
)

// Registry is the running registry with what was registered on it.
type Registry struct {
	*srfake.Registry
	IDs   map[string]int    // the registered schema's id, by subject
	Texts map[string]string // its text, by subject
}

// Schema is one schema to register: a file's text under a subject.
type Schema struct {
	Subject string
	Path    string
	Type    sr.SchemaType
}

// InputSchemaType is the registry's schema type of a registry-backed
// input format (false: not registry-backed).
func InputSchemaType(f string) (sr.SchemaType, bool) {
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

// Start starts the registry and registers each schema file under its
// subject. The caller closes it.
func Start(schemas []Schema) (*Registry, error) {
	r := &Registry{Registry: srfake.New(), IDs: map[string]int{}, Texts: map[string]string{}}
	for _, s := range schemas {
		text, err := os.ReadFile(s.Path)
		if err != nil {
			r.Close()
			return nil, err
		}
		id, _, err := r.RegisterSchema(s.Subject, sr.Schema{Schema: string(text), Type: s.Type})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("register %s under %s: %w", s.Path, s.Subject, err)
		}
		r.IDs[s.Subject], r.Texts[s.Subject] = id, string(text)
	}
	return r, nil
}
