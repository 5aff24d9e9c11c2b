package stageone

import (
	"fmt"
	"math"
	"strconv"

	"github.com/sidestream/sidestream/internal/plan"

	gojson "github.com/goccy/go-json"
	"github.com/tidwall/gjson"
)

// connectEnvelope renders one connect-json value: Kafka Connect's
// JsonConverter envelope {"schema":...,"payload":{...}} with vals in the
// order of cs.Fields. Every field is optional, so nil is always null; any
// other value must be of the field's type, or the record is refused (it
// would make the sink fail, or write a wrong column).
func connectEnvelope(cs *plan.ConnectSchema, vals []any) ([]byte, error) {
	b := make([]byte, 0, len(cs.Schema)+32+24*len(vals))
	b = append(b, `{"schema":`...)
	b = append(b, cs.Schema...)
	b = append(b, `,"payload":{`...)
	for i, f := range cs.Fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.Name)
		b = append(b, ':')
		var v any
		if i < len(vals) {
			v = vals[i]
		}
		var err error
		if b, err = appendConnectValue(b, f.Type, v); err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Name, err)
		}
	}
	return append(b, "}}"...), nil
}

// appendConnectValue appends v as a value of Connect type typ.
func appendConnectValue(b []byte, typ string, v any) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	switch typ {
	case plan.ConnectString:
		switch s := v.(type) {
		case string:
			return appendJSONString(b, s), nil
		case []byte:
			return appendJSONString(b, string(s)), nil
		}
	case plan.ConnectBoolean:
		if x, ok := v.(bool); ok {
			return strconv.AppendBool(b, x), nil
		}
	case plan.ConnectInt64:
		if i, ok := asInt64(v); ok {
			return strconv.AppendInt(b, i, 10), nil
		}
	case plan.ConnectFloat64:
		if f, ok := asFloat64(v); ok {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%v is not a finite number", f)
			}
			if i, ok := v.(int); ok {
				return strconv.AppendInt(b, int64(i), 10), nil
			}
			if i, ok := v.(int64); ok {
				return strconv.AppendInt(b, i, 10), nil
			}
			return strconv.AppendFloat(b, f, 'g', -1, 64), nil
		}
	default:
		return nil, fmt.Errorf("unknown Connect type %q", typ)
	}
	return nil, fmt.Errorf("%s is not a %s", describeValue(v), typ)
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), true
		}
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	case float64:
		// An integral JSON number decoded as a float (1e3, 2.0): exact
		// below 2^63.
		if x == math.Trunc(x) && x >= -(1<<63) && x < 1<<63 {
			return int64(x), true
		}
	case float32:
		return asInt64(float64(x))
	}
	return 0, false
}

func asFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	if i, ok := asInt64(v); ok {
		return float64(i), true
	}
	return 0, false
}

// describeValue names a value's JSON kind for an error message, with the
// value when it is short.
func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("bool %v", x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if f, ok := asFloat64(v); ok {
		return fmt.Sprintf("number %v", f)
	}
	return fmt.Sprintf("%T", v)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := gojson.Marshal(s) // a string always marshals
	return append(b, q...)
}

// ConnectWindowValue turns one window result (the operator's JSON, see
// window.Result) into its connect-json envelope: group_key (the JSON's
// "key", renamed: KEY is a reserved word in SQL), window_start,
// window_end, each aggregate as a field of its own, revision, final.
func ConnectWindowValue(cs *plan.ConnectSchema, value []byte) ([]byte, error) {
	vals, err := windowFieldValues(cs.Fields, value)
	if err != nil {
		return nil, err
	}
	return connectEnvelope(cs, vals)
}

// windowFieldValues takes the values of fields from one window result:
// group_key from "key", the window's bounds, revision and final from
// theirs, every other field from "aggregates" (absent: nil).
func windowFieldValues(fields []plan.ConnectField, value []byte) ([]any, error) {
	if !gjson.ValidBytes(value) {
		return nil, fmt.Errorf("window result is not valid JSON")
	}
	top := gjson.ParseBytes(value)
	aggs := map[string]gjson.Result{}
	top.Get("aggregates").ForEach(func(k, v gjson.Result) bool {
		aggs[k.Str] = v
		return true
	})
	vals := make([]any, len(fields))
	for i, f := range fields {
		var r gjson.Result
		switch f.Name {
		case "group_key":
			r = top.Get("key")
		case "window_start", "window_end", "revision", "final":
			r = top.Get(f.Name)
		default:
			r = aggs[f.Name]
		}
		if !r.Exists() {
			continue // null
		}
		v, err := jsonValue(r)
		if err != nil {
			return nil, fmt.Errorf("field %q: %v", f.Name, err)
		}
		vals[i] = v
	}
	return vals, nil
}
