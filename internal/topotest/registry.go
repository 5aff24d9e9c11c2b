package topotest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/registry"
	"github.com/sidestream/sidestream/internal/srlocal"
)

// testRegistry is a case's in-process schema registry (srlocal.Registry):
// the writer schema of each registry-backed input, named by the test
// file's schemas section, registered under <topic>-value. It frames the
// case's JSON inputs with it, and decodes what the routes received back
// to JSON for the comparison.
type testRegistry struct {
	*srlocal.Registry
	inputs map[string]*inputSchema // by input topic
	decs   []*registry.Decoder
}

// inputSchema is the writer schema a registry-backed input's JSON case
// values are written with.
type inputSchema struct {
	format string
	path   string
	id     int
	avro   avro.Schema // format avro
}

// startTestRegistry starts the registry of a topology with a
// registry-backed input (nil, nil without one). Each such input needs its
// schema file in the test file's schemas (topic: FILE, relative to the
// test file); protobuf inputs are refused (router test does not write
// Protobuf).
func startTestRegistry(dir string, cfg *config.Config, schemas map[string]string) (*testRegistry, error) {
	var list []srlocal.Schema
	inputs := map[string]*inputSchema{}
	for _, in := range cfg.Inputs {
		typ, ok := srlocal.InputSchemaType(in.Format)
		if !ok {
			continue
		}
		if in.Format == config.InputProtobuf {
			return nil, fmt.Errorf("input %s has format protobuf: router test writes avro and json_schema inputs only", in.Topic)
		}
		file, ok := schemas[in.Topic]
		if !ok {
			return nil, fmt.Errorf("input %s has format %s: name its writer schema in the test file (schemas: {%s: FILE}, relative to the test file)", in.Topic, in.Format, in.Topic)
		}
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		list = append(list, srlocal.Schema{Subject: in.Topic + "-value", Path: file, Type: typ})
		inputs[in.Topic] = &inputSchema{format: in.Format, path: file}
	}
	for topic := range schemas {
		if inputs[topic] == nil {
			return nil, fmt.Errorf("schemas: %s is not a registry-backed input of the topology", topic)
		}
	}
	if len(list) == 0 {
		return nil, nil
	}
	lr, err := srlocal.Start(list)
	if err != nil {
		return nil, fmt.Errorf("schemas: %w", err)
	}
	r := &testRegistry{Registry: lr, inputs: inputs}
	if err := r.compile(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// compile parses the inputs' schemas and builds the read-back decoders.
func (r *testRegistry) compile() error {
	for topic, in := range r.inputs {
		in.id = r.IDs[topic+"-value"]
		if in.format != config.InputAvro {
			continue
		}
		var err error
		if in.avro, err = avro.Parse(r.Texts[topic+"-value"]); err != nil {
			return fmt.Errorf("schemas: %s: %w", in.path, err)
		}
	}
	cl, err := sr.NewClient(sr.URLs(r.URL()))
	if err != nil {
		return err
	}
	reg, err := registry.New(cl)
	if err != nil {
		return err
	}
	for _, f := range []registry.Format{registry.Avro, registry.JSONSchema, registry.Protobuf} {
		d, err := registry.NewDecoder(reg, f)
		if err != nil {
			return err
		}
		r.decs = append(r.decs, d)
	}
	return nil
}

// encode writes a case input's JSON value to a registry-backed input in
// the Confluent wire format: Avro binary with the input's schema, or the
// JSON itself for json_schema (not validated: a value the schema refuses
// is a case of the dirty route). schemaID, when not 0, is framed instead
// of the registered id (an unknown id, say). ok is false for an input
// that is not registry-backed.
func (r *testRegistry) encode(topic string, js []byte, schemaID int) (b []byte, ok bool, err error) {
	if r == nil || r.inputs[topic] == nil {
		return nil, false, nil
	}
	in := r.inputs[topic]
	id := in.id
	if schemaID != 0 {
		id = schemaID
	}
	payload := js
	if in.format == config.InputAvro {
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, true, err
		}
		native, err := avroNative(in.avro, v, "")
		if err == nil {
			payload, err = avro.Marshal(in.avro, native)
		}
		if err != nil {
			return nil, true, fmt.Errorf("the value does not fit the Avro schema %s (%s): %s", filepath.Base(in.path), strings.TrimPrefix(avroTypeText(in.avro), "a "), strings.TrimPrefix(err.Error(), ": "))
		}
	}
	var h sr.ConfluentHeader
	framed, err := h.AppendEncode(make([]byte, 0, 5+len(payload)), id, nil)
	if err != nil {
		return nil, true, err
	}
	return append(framed, payload...), true, nil
}

// view is a record value read back as the comparison sees it: a value
// framed with a schema the registry has (an input's, an avro route's)
// and that decodes is its JSON (the router's value model, keys sorted);
// anything else is its bytes as they are.
func (r *testRegistry) view(ctx context.Context, value []byte) []byte {
	if r == nil || len(value) < 5 || value[0] != 0 {
		return value
	}
	for _, d := range r.decs {
		v, err := d.Decode(ctx, value)
		if err != nil {
			continue
		}
		if b, err := json.Marshal(v.Fields); err == nil {
			return b
		}
	}
	return value
}
