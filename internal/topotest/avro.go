package topotest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/sidestream/sidestream/internal/registry"
)

// avroNative turns a case input's JSON value (decoded with UseNumber)
// into the Go value hamba writes for schema s. The JSON is the router's
// value model of a decoded Avro record (internal/registry/doc.go), so a test writes
// an input as it expects an output: a union is its branch's value (or
// {"branch": value}), an enum its symbol, bytes and fixed base64 text,
// timestamps epoch ms (or RFC 3339 text), date epoch days (or
// YYYY-MM-DD), time-millis ms and time-micros µs of the day, a decimal a
// number or its digits as text. A value that does not fit is an error
// naming its path; nothing is coerced into another type.
func avroNative(s avro.Schema, v any, path string) (any, error) {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	switch s := s.(type) {
	case *avro.NullSchema:
		if v == nil {
			return nil, nil
		}
	case *avro.PrimitiveSchema:
		return avroPrimitiveIn(s, v, path)
	case *avro.EnumSchema:
		if str, ok := v.(string); ok && slices.Contains(s.Symbols(), str) {
			return str, nil
		}
		return nil, fmt.Errorf("%s: %s is not a symbol of enum %s (%s)", path, jsonText(v), s.FullName(), strings.Join(s.Symbols(), ", "))
	case *avro.FixedSchema:
		return avroFixedIn(s, v, path)
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			break
		}
		out := make([]any, len(a))
		for i, e := range a {
			x, err := avroNative(s.Items(), e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			break
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			x, err := avroNative(s.Values(), e, fieldPath(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case *avro.RecordSchema:
		return avroRecordIn(s, v, path)
	case *avro.UnionSchema:
		return avroUnionIn(s, v, path)
	}
	return nil, fmt.Errorf("%s: %s is not %s", path, jsonText(v), avroTypeText(s))
}

func avroRecordIn(s *avro.RecordSchema, v any, path string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: %s is not a record %s", path, jsonText(v), s.FullName())
	}
	out := make(map[string]any, len(m))
	known := map[string]bool{}
	for _, f := range s.Fields() {
		known[f.Name()] = true
		fv, ok := m[f.Name()]
		if !ok {
			if f.HasDefault() {
				continue // hamba writes the default
			}
			return nil, fmt.Errorf("%s: field %s of record %s is missing (it has no default)", path, f.Name(), s.FullName())
		}
		x, err := avroNative(f.Type(), fv, fieldPath(path, f.Name()))
		if err != nil {
			return nil, err
		}
		out[f.Name()] = x
	}
	for k := range m {
		if !known[k] {
			return nil, fmt.Errorf("%s: record %s has no field %s", path, s.FullName(), k)
		}
	}
	return out, nil
}

// avroUnionIn picks the branch: null for null, the one a {"name": value}
// wrapper names, else the first branch the value fits.
func avroUnionIn(s *avro.UnionSchema, v any, path string) (any, error) {
	types := s.Types()
	if v == nil {
		if _, pos := types.Get(string(avro.Null)); pos >= 0 {
			return nil, nil
		}
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for name, inner := range m {
			if b, _ := types.Get(name); b != nil {
				x, err := avroNative(b, inner, path)
				if err != nil {
					return nil, err
				}
				return map[string]any{name: x}, nil
			}
		}
	}
	for _, b := range types {
		if b.Type() == avro.Null {
			continue
		}
		if x, err := avroNative(b, v, path); err == nil {
			return map[string]any{registry.AvroTypeName(b): x}, nil
		}
	}
	return nil, fmt.Errorf("%s: %s fits no branch of %s", path, jsonText(v), avroTypeText(s))
}

func avroPrimitiveIn(s *avro.PrimitiveSchema, v any, path string) (any, error) {
	if l := s.Logical(); l != nil {
		if x, ok := avroLogicalIn(l, v); ok {
			return x, nil
		}
		return nil, fmt.Errorf("%s: %s is not %s", path, jsonText(v), avroTypeText(s))
	}
	n, isNum := v.(json.Number)
	switch s.Type() {
	case avro.Boolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case avro.String:
		if str, ok := v.(string); ok {
			return str, nil
		}
	case avro.Bytes:
		if str, ok := v.(string); ok {
			if b, err := base64.StdEncoding.DecodeString(str); err == nil {
				return b, nil
			}
		}
	case avro.Int:
		if i, err := n.Int64(); isNum && err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
			return int32(i), nil
		}
	case avro.Long:
		if i, err := n.Int64(); isNum && err == nil {
			return i, nil
		}
	case avro.Float:
		if f, err := n.Float64(); isNum && err == nil {
			return float32(f), nil
		}
	case avro.Double:
		if f, err := n.Float64(); isNum && err == nil {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%s: %s is not %s", path, jsonText(v), avroTypeText(s))
}

// avroLogicalIn reads a logical type's value as the router renders it.
func avroLogicalIn(l avro.LogicalSchema, v any) (any, bool) {
	n, isNum := v.(json.Number)
	str, isStr := v.(string)
	i, intErr := n.Int64()
	isInt := isNum && intErr == nil
	switch l.Type() {
	case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
		var t time.Time
		switch {
		case isInt:
			t = time.UnixMilli(i).UTC()
		case isStr:
			var err error
			if t, err = time.Parse(time.RFC3339Nano, str); err != nil {
				return nil, false
			}
			t = t.UTC()
		default:
			return nil, false
		}
		if l.Type() == avro.LocalTimestampMillis || l.Type() == avro.LocalTimestampMicros {
			// hamba writes a local timestamp's wall clock in time.Local.
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
		}
		return t, true
	case avro.Date:
		if isInt {
			return time.Unix(i*86400, 0).UTC(), true
		}
		if t, err := time.Parse(time.DateOnly, str); isStr && err == nil {
			return t, true
		}
	case avro.TimeMillis:
		if isInt && i >= 0 && i <= math.MaxInt32 {
			return time.Duration(i) * time.Millisecond, true
		}
	case avro.TimeMicros:
		if isInt {
			return time.Duration(i) * time.Microsecond, true
		}
	case avro.Decimal:
		text := str
		if isNum {
			text = n.String()
		}
		if r, ok := new(big.Rat).SetString(text); (isNum || isStr) && ok {
			return r, true
		}
	case avro.UUID:
		if isStr {
			return str, true
		}
	}
	return nil, false
}

func avroFixedIn(s *avro.FixedSchema, v any, path string) (any, error) {
	if l := s.Logical(); l != nil && l.Type() == avro.Decimal {
		if x, ok := avroLogicalIn(l, v); ok {
			return x, nil
		}
	}
	if m, ok := v.(map[string]any); ok && s.Logical() != nil && s.Logical().Type() == avro.Duration {
		var d [3]uint32
		for i, k := range []string{"months", "days", "milliseconds"} {
			n, _ := m[k].(json.Number)
			x, err := n.Int64()
			if err != nil || x < 0 || x > math.MaxUint32 {
				return nil, fmt.Errorf("%s: %s is not a duration {months, days, milliseconds}", path, jsonText(v))
			}
			d[i] = uint32(x)
		}
		return avro.LogicalDuration{Months: d[0], Days: d[1], Milliseconds: d[2]}, nil
	}
	str, _ := v.(string)
	b, err := base64.StdEncoding.DecodeString(str)
	if _, isStr := v.(string); !isStr || err != nil || len(b) != s.Size() {
		return nil, fmt.Errorf("%s: %s is not %d bytes of fixed %s as base64 text", path, jsonText(v), s.Size(), s.FullName())
	}
	a := reflect.New(reflect.ArrayOf(s.Size(), reflect.TypeFor[byte]())).Elem()
	reflect.Copy(a, reflect.ValueOf(b))
	return a.Interface(), nil
}

func avroTypeText(s avro.Schema) string {
	switch s := s.(type) {
	case avro.NamedSchema:
		return fmt.Sprintf("a %s %s", s.Type(), s.FullName())
	case *avro.UnionSchema:
		names := make([]string, 0, len(s.Types()))
		for _, b := range s.Types() {
			names = append(names, registry.AvroTypeName(b))
		}
		return "the union [" + strings.Join(names, ", ") + "]"
	}
	return "a " + registry.AvroTypeName(s)
}

// jsonText is a value as the case wrote it, shortened for a message.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

func fieldPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
