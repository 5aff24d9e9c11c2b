package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sidestream/sidestream/internal/wire"
)

// Format is a registry-backed input format.
type Format string

// The formats (the input's `format` values they are meant for).
const (
	Avro       Format = "avro"
	Protobuf   Format = "protobuf"
	JSONSchema Format = "json_schema"
)

func (f Format) schemaType() sr.SchemaType {
	switch f {
	case Protobuf:
		return sr.TypeProtobuf
	case JSONSchema:
		return sr.TypeJSON
	}
	return sr.TypeAvro
}

func (f Format) reason() string {
	switch f {
	case Protobuf:
		return wire.ReasonProtobufDecode
	case JSONSchema:
		return wire.ReasonJSONSchemaDecode
	}
	return wire.ReasonAvroDecode
}

// maxIndexes bounds a Protobuf frame's message-index array (messages
// nested deeper are refused, and a hostile length allocates nothing).
const maxIndexes = 64

// header is franz-go's Confluent wire framing: magic 0, big-endian
// uint32 id, for Protobuf the zig-zag varint message indexes.
var header sr.ConfluentHeader

// Decoder decodes record values of one format framed in the Confluent
// wire format, each with its own writer schema (by its framed id).
// Safe for concurrent use.
type Decoder struct {
	reg    *Registry
	format Format
}

// NewDecoder returns a decoder of format over reg's cache.
func NewDecoder(reg *Registry, format Format) (*Decoder, error) {
	if reg == nil {
		return nil, errors.New("registry: nil registry")
	}
	switch format {
	case Avro, Protobuf, JSONSchema:
	default:
		return nil, fmt.Errorf("registry: format %q is not one of avro, protobuf, json_schema", format)
	}
	return &Decoder{reg: reg, format: format}, nil
}

// Value is one decoded record value: its top-level fields in the
// runtime's value model (package doc) and the writer schema's id.
type Value struct {
	SchemaID int
	Fields   map[string]any
	times    map[string]timeUnit
}

// Decode decodes one record value. Errors: *RecordError (permanent: the
// record goes dirty with its Stage and Reason), *UnavailableError (the
// registry could not answer: retry, dirty nothing), or ctx's error. It
// never panics, whatever value holds.
func (d *Decoder) Decode(ctx context.Context, value []byte) (*Value, error) {
	id, rest, err := header.DecodeID(value)
	if err != nil {
		return nil, notFramed(value)
	}
	s, err := d.reg.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	reason := d.format.reason()
	if s.Type != d.format.schemaType() {
		return nil, recErr(reason, id, "schema id %d is a %s schema; the input's format %s expects %s", id, s.Type, d.format, d.format.schemaType())
	}
	if s.Err != nil {
		return nil, recErr(reason, id, "schema id %d is not usable: %v", id, s.Err)
	}
	out := &Value{SchemaID: id, times: s.times}
	var rerr *RecordError
	switch d.format {
	case Avro:
		out.Fields, rerr = s.avro.decode(id, rest)
	case JSONSchema:
		out.Fields, rerr = s.json.decode(id, rest)
	case Protobuf:
		var md protoreflect.MessageDescriptor
		md, rest, rerr = protoFrame(s.proto, id, rest)
		if rerr == nil {
			out.times = s.proto.timesOf(md)
			out.Fields, rerr = s.proto.decode(id, md, rest)
		}
	}
	if rerr != nil {
		return nil, rerr
	}
	return out, nil
}

func protoFrame(c *protoCodec, id int, rest []byte) (protoreflect.MessageDescriptor, []byte, *RecordError) {
	index, payload, err := header.DecodeIndex(rest, maxIndexes)
	if err != nil {
		what := "truncated or malformed"
		if errors.Is(err, sr.ErrNotRegistered) {
			what = fmt.Sprintf("longer than %d", maxIndexes)
		}
		return nil, nil, recErr(wire.ReasonProtobufDecode, id, "protobuf message indexes after schema id %d are %s: %v", id, what, err)
	}
	md, err := c.message(index)
	if err != nil {
		return nil, nil, recErr(wire.ReasonProtobufDecode, id, "schema id %d: %v", id, err)
	}
	return md, payload, nil
}

func notFramed(value []byte) *RecordError {
	const want = "a schema registry frame (magic byte 0, a 4-byte schema id) is expected"
	switch {
	case value == nil:
		return recErr(wire.ReasonNotRegistryFramed, -1, "value is null (a tombstone); %s", want)
	case len(value) == 0:
		return recErr(wire.ReasonNotRegistryFramed, -1, "value is empty; %s", want)
	case value[0] != 0:
		hint := ""
		if value[0] == '{' || value[0] == '[' {
			hint = " (it looks like plain JSON)"
		}
		return recErr(wire.ReasonNotRegistryFramed, -1, "value starts with byte 0x%02x, not the magic byte 0%s; %s", value[0], hint, want)
	}
	return recErr(wire.ReasonNotRegistryFramed, -1, "value of %d bytes is shorter than the 5-byte frame; %s", len(value), want)
}
