package registry

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/sidestream/sidestream/internal/wire"
)

// avroAPI decodes every Avro schema. Its resolver is hamba's default
// (primitives and the listed logical types, see unwrappedAvro), never
// added to: avroUnion relies on which union branches that makes
// unwrapped. A bytes or string value is at most 8 MiB, an array or map
// at most 1M elements (hostile lengths are refused, not allocated).
var avroAPI = avro.Config{
	MaxByteSliceSize:  8 << 20,
	MaxSliceAllocSize: 1 << 20,
}.Freeze()

type avroCodec struct {
	schema *avro.RecordSchema
}

func compileAvro(text string, refs []reference) (*avroCodec, error) {
	// A cache per schema: the global one would let two versions of a
	// named record (same name, other fields) see each other.
	cache := &avro.SchemaCache{}
	for _, ref := range refs {
		if _, err := avro.ParseWithCache(ref.Schema.Schema, "", cache); err != nil {
			return nil, fmt.Errorf("referenced schema %q does not parse: %w", ref.name, err)
		}
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, fmt.Errorf("avro schema does not parse: %w", err)
	}
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("avro schema is a %s, not a record: the runtime reads records as fields", s.Type())
	}
	return &avroCodec{schema: rec}, nil
}

func (c *avroCodec) decode(id int, payload []byte) (fields map[string]any, rerr *RecordError) {
	defer func() {
		if p := recover(); p != nil {
			fields, rerr = nil, recErr(wire.ReasonAvroDecode, id, "avro payload does not decode with schema id %d: %v", id, p)
		}
	}()
	if err := avroScan(c.schema, payload); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, recErr(wire.ReasonAvroDecode, id, "avro payload of %d bytes is truncated for schema id %d (%s)", len(payload), id, c.schema.FullName())
		}
		return nil, recErr(wire.ReasonAvroDecode, id, "avro payload does not decode with schema id %d (%s): %v", id, c.schema.FullName(), err)
	}
	rd := avro.NewReader(nil, 0, avro.WithReaderConfig(avroAPI)).Reset(payload)
	var v any
	rd.ReadVal(c.schema, &v)
	if rd.Error != nil {
		if errors.Is(rd.Error, io.EOF) {
			return nil, recErr(wire.ReasonAvroDecode, id, "avro payload of %d bytes is truncated for schema id %d (%s)", len(payload), id, c.schema.FullName())
		}
		return nil, recErr(wire.ReasonAvroDecode, id, "avro payload does not decode with schema id %d (%s): %v", id, c.schema.FullName(), rd.Error)
	}
	rd.Peek()
	if rd.Error == nil {
		return nil, recErr(wire.ReasonAvroDecode, id, "avro payload has bytes left after a %s of schema id %d: written with another schema?", c.schema.FullName(), id)
	}
	out, err := avroValue(c.schema, v, 0)
	if err != nil {
		return nil, recErr(wire.ReasonAvroDecode, id, "avro value of schema id %d: %v", id, err)
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, recErr(wire.ReasonAvroDecode, id, "avro value of schema id %d is %T, not a record", id, out)
	}
	return m, nil
}

// maxDepth bounds the nesting of decoded values (a recursive schema can
// nest as deep as the payload has bytes).
const maxDepth = 1000

// avroValue converts hamba's generic value to the runtime's value model,
// walking the writer schema alongside it.
func avroValue(s avro.Schema, v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if v == nil {
		return nil, nil
	}
	switch s := s.(type) {
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("record %s decoded as %T", s.FullName(), v)
		}
		for _, f := range s.Fields() {
			fv, err := avroValue(f.Type(), m[f.Name()], depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", s.Name(), f.Name(), err)
			}
			m[f.Name()] = fv
		}
		return m, nil
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("array decoded as %T", v)
		}
		for i, e := range a {
			ev, err := avroValue(s.Items(), e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			a[i] = ev
		}
		return a, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("map decoded as %T", v)
		}
		for k, e := range m {
			ev, err := avroValue(s.Values(), e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%q]: %w", k, err)
			}
			m[k] = ev
		}
		return m, nil
	case *avro.UnionSchema:
		return avroUnion(s, v, depth)
	case *avro.FixedSchema:
		return avroFixed(s, v)
	case *avro.PrimitiveSchema:
		return avroPrimitive(s, v)
	}
	return scalarValue(v) // enum (a string)
}

// avroUnion: a union decodes to its branch's value, never to a
// {"type": value} wrapper. hamba leaves a union unwrapped when every
// branch is a primitive or a logical type its resolver knows; then the Go
// type names the branch (Avro allows one branch per primitive type).
// Otherwise hamba wraps every branch as {full name: value}; the name
// picks the branch schema.
func avroUnion(s *avro.UnionSchema, v any, depth int) (any, error) {
	if !wrappedUnion(s) {
		for _, b := range s.Types() {
			if p, ok := b.(*avro.PrimitiveSchema); ok && holds(p, v) {
				return avroPrimitive(p, v)
			}
		}
		return nil, fmt.Errorf("union decoded as %T, which none of its branches holds", v)
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, fmt.Errorf("union decoded as %T", v)
	}
	for name, inner := range m {
		for _, b := range s.Types() {
			if AvroTypeName(b) == name {
				return avroValue(b, inner, depth+1)
			}
		}
		return nil, fmt.Errorf("union has no branch %q", name)
	}
	return nil, nil
}

// unwrappedAvro are the union branch names hamba's default type resolver
// knows (avro.NewTypeResolver).
var unwrappedAvro = map[string]bool{
	"null": true, "int": true, "long": true, "float": true, "double": true, "string": true, "bytes": true, "boolean": true,
	"int.date": true, "int.time-millis": true, "long.timestamp-millis": true, "long.timestamp-micros": true,
	"long.time-micros": true, "bytes.decimal": true, "string.uuid": true,
}

func wrappedUnion(s *avro.UnionSchema) bool {
	for _, b := range s.Types() {
		name := AvroTypeName(b)
		switch b.Type() {
		case avro.Map, avro.Array:
			name += ":" // never resolvable (hamba names them map:T, array:T)
		}
		if !unwrappedAvro[name] {
			return true
		}
	}
	return false
}

// AvroTypeName is the name hamba keys a wrapped union branch by (a
// named type's full name, else the type with its logical type).
func AvroTypeName(s avro.Schema) string {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	name := string(s.Type())
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		name += "." + string(l.Logical().Type())
	}
	return name
}

// holds reports whether the unwrapped value v (as hamba's resolver types
// it) is of branch p. A union of int.date and a long timestamp is the one
// ambiguous case: the first of them listed wins.
func holds(p *avro.PrimitiveSchema, v any) bool {
	var lt avro.LogicalType
	if p.Logical() != nil {
		lt = p.Logical().Type()
	}
	switch v.(type) {
	case bool:
		return p.Type() == avro.Boolean
	case int:
		return p.Type() == avro.Int && lt == ""
	case int64:
		return p.Type() == avro.Long && lt == ""
	case float32:
		return p.Type() == avro.Float
	case float64:
		return p.Type() == avro.Double
	case string:
		return p.Type() == avro.String
	case []byte:
		return p.Type() == avro.Bytes && lt == ""
	case *big.Rat:
		return p.Type() == avro.Bytes && lt == avro.Decimal
	case time.Time:
		return lt == avro.Date || lt == avro.TimestampMillis || lt == avro.TimestampMicros
	case time.Duration:
		return lt == avro.TimeMillis || lt == avro.TimeMicros
	}
	return false
}

func avroPrimitive(s *avro.PrimitiveSchema, v any) (any, error) {
	if s.Logical() != nil {
		switch s.Logical().Type() {
		case avro.Date:
			if t, ok := v.(time.Time); ok {
				return int(t.Unix() / 86400), nil // exact: midnight UTC
			}
		case avro.TimeMicros:
			if d, ok := v.(time.Duration); ok {
				return int(d.Microseconds()), nil
			}
		case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			if t, ok := v.(time.Time); ok {
				return intValue(localMillis(t)), nil
			}
		case avro.Decimal:
			if r, ok := v.(*big.Rat); ok {
				return decimalValue(r, s.Logical().(*avro.DecimalLogicalSchema).Scale()), nil
			}
		}
	}
	return scalarValue(v)
}

func avroFixed(s *avro.FixedSchema, v any) (any, error) {
	switch x := v.(type) {
	case *big.Rat:
		scale := 0
		if d, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
			scale = d.Scale()
		}
		return decimalValue(x, scale), nil
	case avro.LogicalDuration:
		return map[string]any{"months": int(x.Months), "days": int(x.Days), "milliseconds": int(x.Milliseconds)}, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Array || rv.Type().Elem().Kind() != reflect.Uint8 {
		return nil, fmt.Errorf("fixed %s decoded as %T", s.FullName(), v)
	}
	b := make([]byte, rv.Len())
	reflect.Copy(reflect.ValueOf(b), rv)
	return base64.StdEncoding.EncodeToString(b), nil
}

// scalarValue converts a value whose Go type says all: integers to int,
// floats to float64, timestamps to epoch ms (floored), time-millis to ms,
// bytes to base64, decimals exact.
func scalarValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, float64:
		return x, nil
	case int:
		return x, nil
	case int32:
		return int(x), nil
	case int64:
		return intValue(x), nil
	case float32:
		return float64(x), nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case time.Time:
		return intValue(x.UnixMilli()), nil
	case time.Duration:
		return int(x.Milliseconds()), nil
	case *big.Rat:
		return decimalValue(x, -1), nil
	}
	return nil, fmt.Errorf("unexpected decoded value %T", v)
}

// localMillis undoes hamba's shift of a local-timestamp into time.Local:
// the wall clock it shows is the stored value read as UTC.
func localMillis(t time.Time) int64 {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC).UnixMilli()
}

// intValue keeps an integer exact: int where it fits (always on 64-bit
// platforms), else float64 as the JSON decoder does.
func intValue(i int64) any {
	if int64(int(i)) == i {
		return int(i)
	}
	return float64(i)
}

// decimalValue is a decimal in the value model: int when integral and it
// fits, float64 only when float64 holds it exactly, else its digits as
// text (scale digits after the point; scale < 0: as few as exact).
func decimalValue(r *big.Rat, scale int) any {
	if r.IsInt() && r.Num().IsInt64() {
		return intValue(r.Num().Int64())
	}
	if f, exact := r.Float64(); exact && !math.IsInf(f, 0) {
		return f
	}
	if scale < 0 {
		scale = 0
		for d := new(big.Int).Set(r.Denom()); d.Cmp(big.NewInt(1)) > 0 && scale < 1000; scale++ {
			d.Quo(d, big.NewInt(10))
		}
	}
	return r.FloatString(scale)
}
