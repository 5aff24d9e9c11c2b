package processor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"

	"github.com/sidestream/sidestream/topology"
)

// Stages a record passes; a failure names the stage on the dirty route.
const (
	StageDecode    = "decode"
	StageSchema    = "schema"
	StageEventTime = "event_time"
	StageRoute     = "route"
	StageProduce   = "produce"
)

// Reasons are short, bounded codes (metric labels); the full message
// travels in the sidestream.error header.
const (
	ReasonNullValue      = "null_value"
	ReasonEmptyValue     = "empty_value"
	ReasonInvalidUTF8    = "invalid_utf8"
	ReasonInvalidJSON    = "invalid_json"
	ReasonNotObject      = "not_object"
	ReasonSchema         = "schema_violation"
	ReasonMissingTime    = "missing_event_time"
	ReasonBadTime        = "bad_event_time"
	ReasonExprError      = "expression_error"
	ReasonPredicateType  = "predicate_not_bool"
	ReasonKeyError       = "key_error"
	ReasonProjectError   = "projection_error"
	ReasonTooLarge       = "too_large"
	ReasonUnknownTopic   = "unknown_input_topic"
	ReasonUnsupportedFmt = "unsupported_format"
)

// RecordError is a permanent failure of one record: it goes to the dirty
// route with Stage, Reason and the message, and the stream goes on.
type RecordError struct {
	Stage  string
	Reason string
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Stage, e.Reason, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

func recErr(stage, reason string, format string, args ...any) *RecordError {
	return &RecordError{Stage: stage, Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Decoded is one input record after decode: its event time and the JSON
// fields the topology's expressions read, nothing more.
type Decoded struct {
	EventTime int64          // epoch ms
	Fields    map[string]any // top-level fields any expression references
}

// decoder reads only what the topology needs from a JSON value: a fast
// validity scan, then one pass over the top-level keys.
type decoder struct {
	fields    map[string]bool
	timeField string
	timeTop   bool // the event-time field is a top-level key
	timeFmt   string
	schemas   map[string]*jsonschema.Schema // by input topic
	topics    map[string]bool
}

func newDecoder(t *topology.Topology) *decoder {
	d := &decoder{
		fields:    map[string]bool{},
		timeField: t.EventTime.Field,
		timeFmt:   t.EventTime.Format,
		schemas:   map[string]*jsonschema.Schema{},
		topics:    map[string]bool{},
	}
	for _, f := range t.Fields {
		d.fields[f] = true
	}
	d.timeTop = d.timeField != "" && !strings.ContainsAny(d.timeField, ".*?|#@\\")
	for _, in := range t.Inputs {
		d.topics[in.Topic] = true
		if in.Schema != nil {
			d.schemas[in.Topic] = in.Schema
		}
	}
	return d
}

// decode validates value and extracts the event time and fields. ts is the
// record's Kafka timestamp, used when the event-time format is kafka.
func (d *decoder) decode(topic string, value []byte, ts time.Time) (*Decoded, *RecordError) {
	if value == nil {
		return nil, recErr(StageDecode, ReasonNullValue, "value is null (a tombstone); a JSON object is expected")
	}
	trimmed := bytes.TrimSpace(value)
	if len(trimmed) == 0 {
		return nil, recErr(StageDecode, ReasonEmptyValue, "value is empty; a JSON object is expected")
	}
	if !utf8.Valid(value) {
		return nil, recErr(StageDecode, ReasonInvalidUTF8, "value is not valid UTF-8")
	}
	if !gjson.ValidBytes(value) {
		return nil, recErr(StageDecode, ReasonInvalidJSON, "value is not valid JSON%s", jsonErrorHint(value))
	}
	if trimmed[0] != '{' {
		return nil, recErr(StageDecode, ReasonNotObject, "value is JSON %s, not an object", jsonKind(trimmed[0]))
	}
	if s := d.schemas[topic]; s != nil {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
		if err != nil {
			return nil, recErr(StageDecode, ReasonInvalidJSON, "value is not valid JSON: %v", err)
		}
		if err := s.Validate(inst); err != nil {
			return nil, &RecordError{Stage: StageSchema, Reason: ReasonSchema, Err: schemaErr(err)}
		}
	}

	out := &Decoded{Fields: make(map[string]any, len(d.fields))}
	var timeRes gjson.Result
	// One pass over the top-level keys. A repeated key: the last wins, as
	// in most JSON decoders.
	gjson.ParseBytes(value).ForEach(func(k, v gjson.Result) bool {
		name := k.Str
		if d.fields[name] {
			out.Fields[name] = jsonValue(v)
		}
		if d.timeTop && name == d.timeField {
			timeRes = v
		}
		return true
	})
	switch {
	case d.timeFmt == topology.TimeKafka:
		out.EventTime = ts.UnixMilli()
		return out, nil
	case !d.timeTop:
		timeRes = gjson.GetBytes(value, d.timeField)
	}
	et, rerr := d.eventTime(timeRes)
	if rerr != nil {
		return nil, rerr
	}
	out.EventTime = et
	return out, nil
}

// Event times are kept within years 0001..9999 so they convert to a
// time.Time and to epoch ms without overflow.
const (
	minEventMillis = -62135596800000
	maxEventMillis = 253402300799999
)

func (d *decoder) eventTime(r gjson.Result) (int64, *RecordError) {
	if !r.Exists() || r.Type == gjson.Null {
		return 0, recErr(StageEventTime, ReasonMissingTime, "event-time field %q is missing or null", d.timeField)
	}
	switch d.timeFmt {
	case topology.TimeEpochMillis, topology.TimeEpochSecs:
		if r.Type != gjson.Number {
			return 0, recErr(StageEventTime, ReasonBadTime, "event-time field %q must be a number (%s), got %s", d.timeField, d.timeFmt, shorten(r.Raw, 64))
		}
		f, err := strconv.ParseFloat(r.Raw, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, recErr(StageEventTime, ReasonBadTime, "event-time field %q: %s is not a finite number", d.timeField, shorten(r.Raw, 64))
		}
		if d.timeFmt == topology.TimeEpochSecs {
			f *= 1000
		}
		if f < minEventMillis || f > maxEventMillis {
			return 0, recErr(StageEventTime, ReasonBadTime, "event-time field %q: %s is outside years 0001-9999", d.timeField, shorten(r.Raw, 64))
		}
		return int64(math.Floor(f)), nil
	case topology.TimeRFC3339:
		if r.Type != gjson.String {
			return 0, recErr(StageEventTime, ReasonBadTime, "event-time field %q must be an RFC 3339 string, got %s", d.timeField, shorten(r.Raw, 64))
		}
		t, err := time.Parse(time.RFC3339Nano, r.Str)
		if err != nil {
			return 0, recErr(StageEventTime, ReasonBadTime, "event-time field %q: %q is not RFC 3339 (e.g. 2026-11-30T17:25:57Z)", d.timeField, shorten(r.Str, 64))
		}
		return t.UnixMilli(), nil
	}
	return 0, recErr(StageEventTime, ReasonBadTime, "unsupported event-time format %q", d.timeFmt)
}

// jsonValue converts a gjson value for expressions: integers that fit stay
// exact as int (IDs must not round through float64), other numbers are
// float64, objects and arrays are decoded.
func jsonValue(v gjson.Result) any {
	switch v.Type {
	case gjson.Null:
		return nil
	case gjson.False:
		return false
	case gjson.True:
		return true
	case gjson.String:
		return v.Str
	case gjson.Number:
		if i, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
			return int(i)
		}
		f, err := strconv.ParseFloat(v.Raw, 64)
		if err != nil {
			return v.Raw // beyond float64: keep the digits as text
		}
		return f
	}
	return v.Value()
}

func jsonKind(c byte) string {
	switch c {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// jsonErrorHint names the first offset where the standard decoder fails,
// so the dirty header points at the bad byte.
// It runs only on the dirty path.
func jsonErrorHint(value []byte) string {
	var raw json.RawMessage
	err := json.Unmarshal(value, &raw)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf(" (%s at byte %d)", se.Error(), se.Offset)
	case err != nil:
		return " (" + err.Error() + ")"
	}
	return ""
}

func schemaErr(err error) error {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		// The basic output lists each failing keyword with its location.
		var parts []string
		for _, u := range ve.BasicOutput().Errors {
			if u.Error == nil || u.InstanceLocation == "" && len(parts) > 0 {
				continue
			}
			loc := u.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			parts = append(parts, fmt.Sprintf("at %s: %s", loc, u.Error.String()))
			if len(parts) == 3 {
				break
			}
		}
		if len(parts) > 0 {
			return errors.New("schema violation " + strings.Join(parts, "; "))
		}
	}
	return fmt.Errorf("schema violation: %s", shorten(err.Error(), 300))
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
