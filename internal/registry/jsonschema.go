package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sidestream/sidestream/internal/wire"
)

type jsonCodec struct {
	schema *jsonschema.Schema
}

// compileJSONSchema compiles the registry's JSON Schema. References are
// resources at their names, resolved against the schema's base URL
// (mem://schema-registry/ids/ID.json); nothing is loaded from the network.
func compileJSONSchema(id int, text string, refs []reference) (*jsonCodec, error) {
	base := fmt.Sprintf("mem://schema-registry/ids/%d.json", id)
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	for _, ref := range refs {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(ref.Schema.Schema))
		if err != nil {
			return nil, fmt.Errorf("referenced schema %q is not JSON: %w", ref.name, err)
		}
		u, err := url.Parse(base)
		if err != nil {
			return nil, err
		}
		r, err := u.Parse(ref.name)
		if err != nil {
			return nil, fmt.Errorf("reference name %q is not a URL: %w", ref.name, err)
		}
		if err := c.AddResource(r.String(), doc); err != nil {
			return nil, fmt.Errorf("referenced schema %q: %w", ref.name, err)
		}
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("json schema is not JSON: %w", err)
	}
	if err := c.AddResource(base, doc); err != nil {
		return nil, fmt.Errorf("json schema: %w", err)
	}
	s, err := c.Compile(base)
	if err != nil {
		return nil, fmt.Errorf("json schema does not compile: %w", err)
	}
	return &jsonCodec{schema: s}, nil
}

type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s: not among the registry's references (nothing is loaded from elsewhere)", u)
}

func (c *jsonCodec) decode(id int, payload []byte) (map[string]any, *RecordError) {
	if !utf8.Valid(payload) {
		return nil, recErr(wire.ReasonJSONSchemaDecode, id, "value after the frame of schema id %d is not valid UTF-8", id)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, recErr(wire.ReasonJSONSchemaDecode, id, "value after the frame of schema id %d is not valid JSON: %v", id, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, recErr(wire.ReasonJSONSchemaDecode, id, "value after the frame of schema id %d has data after its JSON value", id)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, recErr(wire.ReasonJSONSchemaDecode, id, "value after the frame of schema id %d is JSON %s, not an object", id, jsonKind(v))
	}
	if err := c.schema.Validate(v); err != nil {
		return nil, recErr(wire.ReasonJSONSchemaInvalid, id, "value does not match schema id %d: %s", id, schemaMessage(err))
	}
	ExactNumbers(obj)
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// schemaMessage lists the first failing keywords with their locations
// (SchemaViolations), else the error cut to 300 bytes.
func schemaMessage(err error) string {
	if msg, ok := SchemaViolations(err); ok {
		return msg
	}
	s := err.Error()
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "..."
	}
	return s
}

// SchemaViolations lists the first three failing keywords of a JSON
// Schema validation error with their instance locations (the validator's
// basic output): "at /level: value must be one of ...; at /ts: ...". The
// JSON input's schema check and the json_schema input say the same.
func SchemaViolations(err error) (string, bool) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "", false
	}
	// The validator lists violations in an order that follows a map, so
	// the same record could read differently on a replay: sort them (by
	// location, then text) before keeping the first three. A violation
	// of the whole value ("/") counts only when there is no other.
	var parts, root []string
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		if u.InstanceLocation == "" {
			root = append(root, "at /: "+u.Error.String())
			continue
		}
		parts = append(parts, fmt.Sprintf("at %s: %s", u.InstanceLocation, u.Error.String()))
	}
	if len(parts) == 0 {
		parts = root
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	if len(parts) > 3 {
		parts = parts[:3]
	}
	return strings.Join(parts, "; "), len(parts) > 0
}

// ExactNumbers turns json.Number into the value model's numbers, in place.
func ExactNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return NumberValue(string(x))
	case map[string]any:
		for k, e := range x {
			x[k] = ExactNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = ExactNumbers(e)
		}
	}
	return v
}
