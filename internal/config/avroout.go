package config

import (
	"encoding/json"
	"fmt"
	"strings"
)

// OutputAvro writes the fields of a connect-json route (the same typed
// list: projection types, the input JSON Schema or a window's fixed
// fields and aggregates) as Avro binary in the Confluent wire format, its
// record schema registered under the route topic's <topic>-value subject
// (TopicNameStrategy) when the processor starts.
const OutputAvro = "avro"

// AvroNamespace is the namespace of every route's Avro record schema.
const AvroNamespace = "sidestream"

// AvroSchema is the compiled Avro output of an avro route: the typed
// fields it writes, in schema order, and the record schema registered for
// them.
type AvroSchema struct {
	Fields []ConnectField
	// FromInput: the fields are the input JSON Schema's top-level
	// properties (a route without a projection), read from the record.
	FromInput bool
	// Name is the record's name (the route name as an Avro name).
	Name string
	// Subject is where the schema is registered: <topic>-value.
	Subject string
	// Schema is the record schema's JSON: every field a union
	// ["null", T] with default null.
	Schema string
	// Path and Line name the route in the config file (routes[2], its
	// line; 0 when the config was not loaded from a file), for the
	// errors of its registration at start.
	Path string
	Line int
}

// Where names the route for an error: "routes[2] (line 31)".
func (a *AvroSchema) Where() string {
	if a.Line > 0 {
		return fmt.Sprintf("%s (line %d)", a.Path, a.Line)
	}
	return a.Path
}

// AvroType is the Avro primitive type of a connect-json field type.
func AvroType(connectType string) string {
	switch connectType {
	case ConnectInt64:
		return "long"
	case ConnectFloat64:
		return "double"
	case ConnectBoolean:
		return "boolean"
	}
	return "string"
}

// AvroName turns a route name (a-z, 0-9, '_', '-') into an Avro name
// ([A-Za-z_][A-Za-z0-9_]*): any other character becomes '_', and a
// leading digit gets a '_' before it.
func AvroName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
		default:
			r = '_'
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// NewAvroSchema derives the record schema of an avro route named route
// writing topic, from its typed fields.
func NewAvroSchema(route, topic string, cs *ConnectSchema) *AvroSchema {
	a := &AvroSchema{Fields: cs.Fields, FromInput: cs.FromInput, Name: AvroName(route), Subject: topic + "-value"}
	type field struct {
		Name    string   `json:"name"`
		Type    []string `json:"type"`
		Default *string  `json:"default"` // always nil: null
	}
	s := struct {
		Type      string  `json:"type"`
		Name      string  `json:"name"`
		Namespace string  `json:"namespace"`
		Fields    []field `json:"fields"`
	}{Type: "record", Name: a.Name, Namespace: AvroNamespace, Fields: make([]field, 0, len(cs.Fields))}
	for _, f := range cs.Fields {
		s.Fields = append(s.Fields, field{Name: f.Name, Type: []string{"null", AvroType(f.Type)}})
	}
	b, _ := json.Marshal(s) // strings only: cannot fail
	a.Schema = string(b)
	return a
}

// avroNameProblems: every field of an avro route must be an Avro name
// (its schema would not parse otherwise); a name is never rewritten, as a
// reader would look for the field under the name it was given.
func avroNameProblems(p string, r Route, cs *ConnectSchema) []connectProblem {
	const why = "is not an Avro name ([A-Za-z_][A-Za-z0-9_]*); rename it"
	var probs []connectProblem
	switch {
	case r.Window != nil:
		for i, a := range r.Window.Aggregates {
			if !identRe.MatchString(a.Name) {
				ap := fmt.Sprintf("%s.window.aggregates[%d]", p, i)
				probs = append(probs, connectProblem{ap + ".name", fmt.Sprintf("%s: format %s: aggregate name %q %s", ap, OutputAvro, a.Name, why)})
			}
		}
	case len(r.Project) > 0:
		for _, f := range r.Project {
			if !identRe.MatchString(f.Name) {
				fp := fieldPath(p+".project", f.Name)
				probs = append(probs, connectProblem{fp, fmt.Sprintf("%s: format %s: field name %q %s", fp, OutputAvro, f.Name, why)})
			}
		}
	default:
		for _, f := range cs.Fields {
			if !identRe.MatchString(f.Name) {
				probs = append(probs, connectProblem{p + ".format", fmt.Sprintf("%s: format %s: property %q of the input JSON Schema %s, or project the fields", p, OutputAvro, f.Name, why)})
			}
		}
	}
	return probs
}

// avroNeedsRegistry reports each avro route, at its format's line, when
// no registry URL is set: its schema is registered at start.
func (c *Config) avroNeedsRegistry() []string {
	k := newOverrideCheck(c, "routes", nil)
	for i, r := range c.Routes {
		if r.Format == OutputAvro {
			k.report(fmt.Sprintf("routes[%d].format", i), "route %q has format avro, whose schema is registered in a schema registry: set schema_registry.url (or %s)", r.Name, EnvRegistryURL)
		}
	}
	return k.probs
}

// routeLine is the line of routes[i] in the loaded file (0: unknown).
func (c *Config) routeLine(path string) int {
	if c.src == nil || !c.src.has(path) {
		return 0
	}
	d := doc{file: c.src.file, pos: c.src.pos}
	return d.lookup(path).Line
}
