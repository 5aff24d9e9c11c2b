package registry

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"
)

// Schema is one registry schema by id, compiled. Err is set when it does
// not compile (or a reference is missing): every record framed with its
// id is then dirty, with the format's decode reason.
type Schema struct {
	ID   int
	Type sr.SchemaType
	Err  error

	avro  *avroCodec
	proto *protoCodec
	json  *jsonCodec
	// times: dotted paths of the writer schema's logical time fields
	// (Avro timestamp-*, local-timestamp-*, date). Protobuf's are per
	// message: protoCodec.timesOf.
	times map[string]timeUnit
	// avroFields: the Avro schema's field paths (fields.go), from the
	// walk that found times.
	avroFields *fieldNode
}

type timeUnit int

const (
	unitMillis timeUnit = iota + 1 // the decoded value is epoch ms
	unitDays                       // the decoded value is epoch days
)

// compile builds the codec of a fetched schema; ctx bounds compiling a
// .proto (the fetch's own deadline).
func compile(ctx context.Context, id int, raw sr.Schema, refs []reference) *Schema {
	s := &Schema{ID: id, Type: raw.Type, times: map[string]timeUnit{}}
	var err error
	switch raw.Type {
	case sr.TypeAvro:
		s.avro, err = compileAvro(raw.Schema, refs)
		if err == nil {
			s.avroFields = avroFields(s.avro.schema, "", s.times, map[string]bool{})
		}
	case sr.TypeProtobuf:
		s.proto, err = compileProto(ctx, id, raw.Schema, refs)
	case sr.TypeJSON:
		s.json, err = compileJSONSchema(id, raw.Schema, refs)
	default:
		err = fmt.Errorf("schema type %s is not supported", raw.Type)
	}
	s.Err = err
	return s
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
