package registry

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sidestream/sidestream/internal/wire"
)

// Event-time formats, equal to topology's event_time.format values.
const (
	TimeEpochMillis = "epoch_ms"
	TimeEpochSecs   = "epoch_s"
	TimeRFC3339     = "rfc3339"
)

// Event times are kept within years 0001..9999, as the JSON decoder
// keeps them, so they convert to a time.Time and epoch ms without
// overflow.
const (
	minEventMillis = -62135596800000
	maxEventMillis = 253402300799999
)

// NumberValue is the JSON decoder's rule for a JSON number: an integer
// that fits is an int (exact), others float64, beyond float64 the text.
func NumberValue(raw string) any {
	if i, err := strconv.ParseInt(raw, 10, 64); err == nil {
		return intValue(i)
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return raw
	}
	return f
}

// Get returns the value at a dotted path ("meta.ts"; a segment of an
// array is its index) and whether it is there.
func (v *Value) Get(path string) (any, bool) {
	return lookup(v.Fields, path)
}

func lookup(fields map[string]any, path string) (any, bool) {
	if x, ok := fields[path]; ok || !strings.Contains(path, ".") {
		return x, ok
	}
	var cur any = fields
	for seg := range strings.SplitSeq(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			x, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = x
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// EventTime returns the epoch ms of the (possibly dotted) field. A
// logical time field of the writer schema (Avro timestamp-millis/micros,
// local-timestamp-*, date; Protobuf google.protobuf.Timestamp) is a time
// whatever format says: its value is already epoch ms (a date: epoch
// days, times 86400000). Any other field follows the JSON input's rules
// for format: epoch_ms or epoch_s (a number, floored to the ms), rfc3339
// (a string). Errors are StageEventTime records errors (missing, bad).
func (v *Value) EventTime(field, format string) (int64, *RecordError) {
	x, ok := v.Get(field)
	if !ok || x == nil {
		return 0, timeErr(wire.ReasonMissingTime, v.SchemaID, "event-time field %q is missing or null", field)
	}
	switch v.times[field] {
	case unitMillis:
		if i, ok := x.(int); ok {
			return inRange(int64(i), field, v.SchemaID)
		}
	case unitDays:
		if i, ok := x.(int); ok && i > minEventMillis/86400000 && i < maxEventMillis/86400000 {
			return int64(i) * 86400000, nil
		}
	}
	return EventTime(x, field, format, v.SchemaID)
}

// EventTime converts a decoded value x of field to epoch ms by format,
// with the JSON input's rules. id is the schema id for the message.
func EventTime(x any, field, format string, id int) (int64, *RecordError) {
	switch format {
	case TimeEpochMillis, TimeEpochSecs:
		secs := format == TimeEpochSecs
		switch n := x.(type) {
		case int:
			if secs {
				if n < minEventMillis/1000-1 || n > maxEventMillis/1000+1 {
					return 0, timeErr(wire.ReasonBadTime, id, "event-time field %q: %d is outside years 0001-9999", field, n)
				}
				return inRange(int64(n)*1000, field, id)
			}
			return inRange(int64(n), field, id)
		case float64:
			if math.IsNaN(n) || math.IsInf(n, 0) {
				return 0, timeErr(wire.ReasonBadTime, id, "event-time field %q: %v is not a finite number", field, n)
			}
			return floatMillis(n, secs, field, id)
		}
		return 0, timeErr(wire.ReasonBadTime, id, "event-time field %q must be a number (%s), got %s", field, format, kindOf(x))
	case TimeRFC3339:
		s, ok := x.(string)
		if !ok {
			return 0, timeErr(wire.ReasonBadTime, id, "event-time field %q must be an RFC 3339 string, got %s", field, kindOf(x))
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			if len(s) > 64 {
				s = strings.ToValidUTF8(s[:64], "") + "..."
			}
			return 0, timeErr(wire.ReasonBadTime, id, "event-time field %q: %q is not RFC 3339 (e.g. 2026-11-30T17:25:57Z)", field, s)
		}
		return inRange(t.UnixMilli(), field, id)
	}
	return 0, timeErr(wire.ReasonBadTime, id, "unsupported event-time format %q", format)
}

// floatMillis floors n (ms, or s when secs) to the ms on its shortest
// decimal text: through float64, 1790000000.123 s times 1000 floors to
// ...122.
func floatMillis(n float64, secs bool, field string, id int) (int64, *RecordError) {
	f := n
	if secs {
		f *= 1000
	}
	if f < minEventMillis || f > maxEventMillis {
		return 0, timeErr(wire.ReasonBadTime, id, "event-time field %q: %v is outside years 0001-9999", field, n)
	}
	text := strconv.FormatFloat(math.Abs(n), 'f', -1, 64)
	whole, frac, _ := strings.Cut(text, ".")
	if secs {
		frac += "000"
		whole, frac = whole+frac[:3], frac[3:]
	}
	ms, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return int64(math.Floor(f)), nil
	}
	if n < 0 {
		ms = -ms
		if strings.Trim(frac, "0") != "" {
			ms-- // floor, not truncation, below zero
		}
	}
	return ms, nil
}

func inRange(ms int64, field string, id int) (int64, *RecordError) {
	if ms < minEventMillis || ms > maxEventMillis {
		return 0, timeErr(wire.ReasonBadTime, id, "event-time field %q: %d ms is outside years 0001-9999", field, ms)
	}
	return ms, nil
}

func timeErr(reason string, id int, format string, args ...any) *RecordError {
	e := recErr(reason, id, format, args...)
	e.Stage = wire.StageEventTime
	return e
}

func kindOf(x any) string {
	switch x.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case int, float64:
		return "a number"
	}
	return "null"
}
