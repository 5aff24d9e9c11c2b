package registry

import (
	"context"
	"fmt"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"
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
			avroTimes(s.avro.schema, "", s.times, map[string]bool{})
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

// avroTimes records the paths of logical time fields, through records and
// unions (not arrays or maps); a recursive record is walked once.
func avroTimes(s avro.Schema, path string, out map[string]timeUnit, seen map[string]bool) {
	switch x := s.(type) {
	case *avro.RefSchema:
		avroTimes(x.Schema(), path, out, seen)
	case *avro.RecordSchema:
		if seen[x.FullName()] {
			return
		}
		seen[x.FullName()] = true
		for _, f := range x.Fields() {
			avroTimes(f.Type(), join(path, f.Name()), out, seen)
		}
		delete(seen, x.FullName())
	case *avro.UnionSchema:
		for _, b := range x.Types() {
			avroTimes(b, path, out, seen)
		}
	case *avro.PrimitiveSchema:
		if x.Logical() == nil || path == "" {
			return
		}
		unit := timeUnit(0)
		switch x.Logical().Type() {
		case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			unit = unitMillis
		case avro.Date:
			unit = unitDays
		}
		if _, ok := out[path]; !ok && unit != 0 {
			out[path] = unit // in a union of both, the first branch listed
		}
	}
}

// protoTimes records the paths of google.protobuf.Timestamp fields of a
// message, through singular message fields, at most 8 deep.
func protoTimes(md protoreflect.MessageDescriptor, path string, out map[string]timeUnit, depth int) {
	if depth > 8 {
		return
	}
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if fd.Message() == nil || fd.IsList() || fd.IsMap() {
			continue
		}
		p := join(path, string(fd.Name()))
		if fd.Message().FullName() == "google.protobuf.Timestamp" {
			out[p] = unitMillis
			continue
		}
		protoTimes(fd.Message(), p, out, depth+1)
	}
}
