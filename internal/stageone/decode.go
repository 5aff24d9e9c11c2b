package stageone

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

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/registry"
	"github.com/sidestream/sidestream/internal/wire"
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

// NewRecordError is a RecordError with a message formatted as by
// fmt.Errorf.
func NewRecordError(stage, reason string, format string, args ...any) *RecordError {
	return &RecordError{Stage: stage, Reason: reason, Err: fmt.Errorf(format, args...)}
}

// recErr is NewRecordError, short for the many call sites of this package.
func recErr(stage, reason string, format string, args ...any) *RecordError {
	return NewRecordError(stage, reason, format, args...)
}

// Decoded is one input record after decode: its event time and the JSON
// fields the topology's expressions read, nothing more.
type Decoded struct {
	EventTime int64 // epoch ms
	// Fields are the top-level fields any expression references, by name
	// (stage two's DecodeFields, the registry inputs); nil when vals
	// holds them.
	Fields map[string]any
	// Clamped: the event time was beyond event_time.max_ahead and
	// on_ahead is clamp; EventTime is the bound.
	Clamped bool
	// whole is a registry-backed input's whole decoded value (its
	// top-level fields), nil for JSON: an assembly part of the input
	// nests it as JSON (partValue), not the Avro or Protobuf bytes.
	whole map[string]any
	// vals are the fields by number (plan.Fields) when stage one
	// decoded a JSON value: reused from record to record, no map. An
	// absent field is nil, as a JSON null is: expressions cannot tell
	// them apart (expr-lang reads an absent variable as nil).
	vals []any
	// spans and strs are decodeInto's own, reused from record to record:
	// the referenced members the scan found, the short strings interned.
	spans []span
	strs  *strCache
}

// field is the value of field number i, name.
func (d *Decoded) field(i int, name string) any {
	if d.vals != nil {
		if i < 0 {
			return nil
		}
		return d.vals[i]
	}
	return d.Fields[name]
}

// decoder reads only what the topology needs from a JSON value: a fast
// validity scan, then one pass over the top-level keys.
type decoder struct {
	fields    map[string]bool
	index     map[string]int // field name -> number (plan.Fields)
	names     []string       // plan.Fields
	timeField string
	timeTop   bool // the event-time field is a top-level key
	timeFmt   string
	maxAhead  int64                         // ms; 0: no bound
	clamp     bool                          // on_ahead: clamp (else dirty)
	schemas   map[string]*jsonschema.Schema // by input topic
	// fast holds the schemas' fast paths (schemafast.go), by input topic:
	// only the schemas within its subset have one.
	fast    map[string]*fastSchema
	topics  map[string]bool
	formats map[string]string // the registry-backed inputs' formats, by topic
	// timeHead and timeRest: a nested event-time path getLast walks
	// plainly ("meta.ts"), split at its first dot; "" otherwise.
	timeHead, timeRest string
}

func newDecoder(t *plan.Plan) *decoder {
	d := &decoder{
		fields:    map[string]bool{},
		index:     map[string]int{},
		timeField: t.EventTime.Field,
		timeFmt:   t.EventTime.Format,
		maxAhead:  t.EventTime.MaxAhead.D().Milliseconds(),
		clamp:     t.EventTime.OnAhead == plan.AheadClamp,
		schemas:   map[string]*jsonschema.Schema{},
		fast:      map[string]*fastSchema{},
		topics:    map[string]bool{},
		formats:   map[string]string{},
	}
	d.names = t.Fields
	for i, f := range t.Fields {
		d.fields[f] = true
		d.index[f] = i
	}
	d.timeTop = d.timeField != "" && !strings.ContainsAny(d.timeField, ".*?|#@\\")
	if !d.timeTop && plainPath(d.timeField) {
		d.timeHead, d.timeRest, _ = strings.Cut(d.timeField, ".")
	}
	for _, in := range t.Inputs {
		d.topics[in.Topic] = true
		if plan.RegistryFormat(in.Format) {
			d.formats[in.Topic] = in.Format
		}
		if in.Schema != nil {
			d.schemas[in.Topic] = in.Schema
			if f := newFastSchema(in.Schema); f != nil {
				d.fast[in.Topic] = f
			}
		}
	}
	return d
}

// decodeInto validates value and extracts the event time and fields
// into out, whose vals are len(plan.Fields) nils. ts is the record's Kafka
// timestamp, used when the event-time format is kafka.
//
// The value is read once: eachMember checks its grammar while it finds
// the top-level members, and only the referenced members' values are
// decoded, each from its own bytes, once the whole value is known to be
// valid. A value the scan refuses gets its reason (and message) from
// validate, the checks in their order. A repeated key: the last wins, as
// in most JSON decoders. The input's JSON Schema is decided on the same
// pass where its fast path can (schemafast.go); a record it does not
// pass goes to the validator, which gives the verdict and the reason.
func (d *decoder) decodeInto(out *Decoded, topic string, value []byte, ts time.Time) *RecordError {
	rerr := d.decodeOnce(out, topic, value, ts)
	clear(out.spans) // they point into value: not kept past the record
	out.spans = out.spans[:0]
	return rerr
}

func (d *decoder) decodeOnce(out *Decoded, topic string, value []byte, ts time.Time) *RecordError {
	m := members{d: d, out: out}
	if len(d.fast) > 0 {
		m.fast = d.fast[topic]
	}
	if !eachMember(value, m.member) {
		if rerr := d.validate(topic, value); rerr != nil {
			return rerr
		}
		// The scan refused a value validate accepts: it must not, and
		// the fuzz targets say it does not; if it ever did, gjson's
		// own walk reads the members.
		m.slowMembers(value)
	} else if m.fast == nil || !m.fast.valid(&m.fs) {
		if rerr := d.checkSchema(topic, value); rerr != nil {
			return rerr
		}
	}
	if rerr := d.fieldValues(out); rerr != nil {
		return rerr
	}
	if d.timeFmt == plan.TimeKafka {
		out.EventTime = ts.UnixMilli()
		return nil
	}
	et, rerr := d.timeOf(value, m.timeRaw)
	if rerr != nil {
		return rerr
	}
	_, rerr = d.bounded(out, et, ts)
	return rerr
}

// members collects, during the scan, the referenced members' values (in
// out.spans, in order) and the event-time member's (the last one; for a
// nested path, its first segment's), and the schema's fast path's
// progress (fast, nil when the input has none).
type members struct {
	d       *decoder
	out     *Decoded
	timeRaw []byte
	fast    *fastSchema
	fs      fastState
}

func (m *members) member(key []byte, escaped bool, raw []byte) {
	if m.fast != nil && !m.fs.off {
		m.fast.member(&m.fs, key, escaped, raw)
	}
	name := key[1 : len(key)-1]
	if escaped {
		name = []byte(gjson.ParseBytes(key).Str)
	}
	if i := m.d.fieldNumber(name); i >= 0 {
		m.out.spans = append(m.out.spans, span{field: i, raw: raw})
	}
	if m.d.timeTop && string(name) == m.d.timeField || m.d.timeHead != "" && string(name) == m.d.timeHead {
		m.timeRaw = raw
	}
}

// slowMembers is the scan's fallback: the members as gjson finds them.
func (m *members) slowMembers(value []byte) {
	m.out.spans, m.timeRaw = m.out.spans[:0], nil
	gjson.ParseBytes(value).ForEach(func(k, v gjson.Result) bool {
		m.member([]byte(k.Raw), strings.IndexByte(k.Raw, '\\') >= 0, []byte(v.Raw))
		return true
	})
}

// fieldNumber is the number of the referenced field name, -1 if none:
// a few names are compared in turn, more are looked up in the map.
func (d *decoder) fieldNumber(name []byte) int {
	if len(d.names) > 8 {
		if i, ok := d.index[string(name)]; ok {
			return i
		}
		return -1
	}
	for i, n := range d.names {
		if n == string(name) {
			return i
		}
	}
	return -1
}

// fieldValues decodes the referenced members' values the scan found, in
// member order, into out.vals: the first that does not decode makes the
// record dirty.
func (d *decoder) fieldValues(out *Decoded) *RecordError {
	for _, s := range out.spans {
		fv, err := out.fieldValue(s.raw)
		if err != nil {
			return recErr(wire.StageDecode, wire.ReasonInvalidJSON, "field %q: %v", d.names[s.field], err)
		}
		out.vals[s.field] = fv
	}
	return nil
}

// timeOf reads the event-time field of a valid JSON object: raw is the
// top-level member's value the scan found (nil when absent); a nested
// path is read with getLast, from that member's value when the path is
// plain (getLast's first step is that member: the last of its name).
func (d *decoder) timeOf(value, raw []byte) (int64, *RecordError) {
	switch {
	case !d.timeTop && d.timeHead == "":
		return d.eventTime(getLast(gjson.ParseBytes(value), d.timeField))
	case raw == nil:
		return d.eventTime(gjson.Result{})
	case !d.timeTop:
		return d.eventTime(getLast(gjson.ParseBytes(raw), d.timeRest))
	}
	if ms, ok := d.epochInt(raw); ok {
		return ms, nil
	}
	return d.eventTime(gjson.ParseBytes(raw))
}

// validate is what a JSON value must be before its fields are read: not
// null or empty, UTF-8, JSON, an object, and valid against the input's
// JSON Schema, if it has one.
func (d *decoder) validate(topic string, value []byte) *RecordError {
	if value == nil {
		return recErr(wire.StageDecode, wire.ReasonNullValue, "value is null (a tombstone); a JSON object is expected")
	}
	// Only JSON's own whitespace: bytes.TrimSpace would also take a
	// no-break space or a form feed, calling an invalid value empty.
	trimmed := bytes.Trim(value, jsonSpace)
	if len(trimmed) == 0 {
		return recErr(wire.StageDecode, wire.ReasonEmptyValue, "value is empty; a JSON object is expected")
	}
	if !utf8.Valid(value) {
		return recErr(wire.StageDecode, wire.ReasonInvalidUTF8, "value is not valid UTF-8")
	}
	if !gjson.ValidBytes(value) {
		return recErr(wire.StageDecode, wire.ReasonInvalidJSON, "value is not valid JSON%s", jsonErrorHint(value))
	}
	if trimmed[0] != '{' {
		return recErr(wire.StageDecode, wire.ReasonNotObject, "value is JSON %s, not an object", jsonKind(trimmed[0]))
	}
	return d.checkSchema(topic, value)
}

// checkSchema validates a JSON object against its input's JSON Schema,
// if it has one.
func (d *decoder) checkSchema(topic string, value []byte) *RecordError {
	if s := d.schemas[topic]; s != nil {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
		if err != nil {
			return recErr(wire.StageDecode, wire.ReasonInvalidJSON, "value is not valid JSON: %v", err)
		}
		if err := s.Validate(inst); err != nil {
			return &RecordError{Stage: wire.StageSchema, Reason: wire.ReasonSchema, Err: schemaErr(err)}
		}
	}
	return nil
}

// bounded sets out's event time et, within event_time.max_ahead of the
// record timestamp ts: beyond it, clamped to the bound or dirty
// (on_ahead). Every input format ends here.
func (d *decoder) bounded(out *Decoded, et int64, ts time.Time) (*Decoded, *RecordError) {
	if bound := ts.UnixMilli() + d.maxAhead; d.maxAhead > 0 && et > bound {
		if !d.clamp {
			return nil, recErr(wire.StageEventTime, wire.ReasonTimeAhead, "event time %s is %s ahead of the record timestamp %s (event_time.max_ahead %s)",
				time.UnixMilli(et).UTC().Format(time.RFC3339Nano), time.Duration(et-ts.UnixMilli())*time.Millisecond,
				ts.UTC().Format(time.RFC3339Nano), time.Duration(d.maxAhead)*time.Millisecond)
		}
		et, out.Clamped = bound, true
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
		return 0, recErr(wire.StageEventTime, wire.ReasonMissingTime, "event-time field %q is missing or null", d.timeField)
	}
	switch d.timeFmt {
	case plan.TimeEpochMillis, plan.TimeEpochSecs:
		if r.Type != gjson.Number {
			return 0, recErr(wire.StageEventTime, wire.ReasonBadTime, "event-time field %q must be a number (%s), got %s", d.timeField, d.timeFmt, shorten(r.Raw, 64))
		}
		f, err := strconv.ParseFloat(r.Raw, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, recErr(wire.StageEventTime, wire.ReasonBadTime, "event-time field %q: %s is not a finite number", d.timeField, shorten(r.Raw, 64))
		}
		if d.timeFmt == plan.TimeEpochSecs {
			f *= 1000
		}
		if f < minEventMillis || f > maxEventMillis {
			return 0, recErr(wire.StageEventTime, wire.ReasonBadTime, "event-time field %q: %s is outside years 0001-9999", d.timeField, shorten(r.Raw, 64))
		}
		shift := 0
		if d.timeFmt == plan.TimeEpochSecs {
			shift = 3
		}
		if ms, ok := decimalFloor(r.Raw, shift); ok {
			return ms, nil
		}
		return int64(math.Floor(f)), nil
	case plan.TimeRFC3339:
		if r.Type != gjson.String {
			return 0, recErr(wire.StageEventTime, wire.ReasonBadTime, "event-time field %q must be an RFC 3339 string, got %s", d.timeField, shorten(r.Raw, 64))
		}
		t, err := time.Parse(time.RFC3339Nano, r.Str)
		if err != nil {
			return 0, recErr(wire.StageEventTime, wire.ReasonBadTime, "event-time field %q: %q is not RFC 3339 (e.g. 2026-11-30T17:25:57Z)", d.timeField, shorten(r.Str, 64))
		}
		return t.UnixMilli(), nil
	}
	return 0, recErr(wire.StageEventTime, wire.ReasonBadTime, "unsupported event-time format %q", d.timeFmt)
}

// jsonValue converts a gjson value for expressions: integers that fit stay
// exact as int (IDs must not round through float64), other numbers are
// float64, objects and arrays are decoded the same way, at any depth.
func jsonValue(v gjson.Result) (any, error) {
	switch v.Type {
	case gjson.Null:
		return nil, nil
	case gjson.False:
		return false, nil
	case gjson.True:
		return true, nil
	case gjson.String:
		return v.Str, nil
	case gjson.Number:
		return registry.NumberValue(v.Raw), nil
	}
	return compositeValue(v.Raw)
}

// compositeValue decodes an object or array with encoding/json, which is
// linear in the input and refuses nesting deeper than 10000. gjson's
// Result.Value re-scans every level's content once per level: quadratic,
// 0.3 s for 20 KB nested 10000 deep, minutes for a 1 MB record, which
// would stall the partition. Repeated keys: the last wins.
func compositeValue(raw string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return registry.ExactNumbers(v), nil
}

// getLast reads a nested event-time path such as "meta.ts" with the rule
// of the top-level pass and the schema validator: where a key repeats, the
// last one wins (gjson.Get takes the first). Paths using gjson's
// wildcards, modifiers, queries or escapes are left to gjson.
func getLast(root gjson.Result, path string) gjson.Result {
	if !plainPath(path) {
		return root.Get(path)
	}
	cur := root
	for seg := range strings.SplitSeq(path, ".") {
		switch {
		case cur.IsObject():
			var next gjson.Result
			cur.ForEach(func(k, v gjson.Result) bool {
				if k.Str == seg {
					next = v
				}
				return true
			})
			cur = next
		case cur.IsArray():
			cur = cur.Get(seg)
		default:
			return gjson.Result{}
		}
	}
	return cur
}

// plainPath: path is dotted names only, which getLast walks itself.
func plainPath(path string) bool {
	return !strings.ContainsAny(path, "*?|#@\\!=<>%") && !strings.HasPrefix(path, ".") && !strings.HasSuffix(path, ".") && !strings.Contains(path, "..")
}

// decimalFloor returns floor(raw × 10^shift) for a JSON number, computed
// on the decimal digits: through float64, 1790000000.123 s times 1000 is
// 1790000000122.9999 and floors to the wrong millisecond. ok is false
// when the result would not fit in 18 digits (the caller has already
// checked the range) or raw is not a plain JSON number.
func decimalFloor(raw string, shift int) (ms int64, ok bool) {
	neg := strings.HasPrefix(raw, "-")
	if neg {
		raw = raw[1:]
	}
	mant, exp := raw, 0
	if i := strings.IndexAny(raw, "eE"); i >= 0 {
		e, err := strconv.Atoi(raw[i+1:])
		if err != nil {
			return 0, false
		}
		mant, exp = raw[:i], e
	}
	digits := mant
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		digits = mant[:i] + mant[i+1:]
		exp -= len(mant) - i - 1
	}
	exp += shift
	digits = strings.TrimLeft(digits, "0")
	var whole, frac string
	switch {
	case digits == "":
		return 0, true
	case exp >= 0:
		if len(digits)+exp > 18 {
			return 0, false
		}
		whole = digits + strings.Repeat("0", exp)
	case -exp >= len(digits):
		frac = digits
	default:
		whole, frac = digits[:len(digits)+exp], digits[len(digits)+exp:]
	}
	if len(whole) > 18 {
		return 0, false
	}
	if whole != "" {
		n, err := strconv.ParseInt(whole, 10, 64)
		if err != nil {
			return 0, false
		}
		ms = n
	}
	if neg {
		ms = -ms
		if strings.Trim(frac, "0") != "" {
			ms-- // floor, not truncation, below zero
		}
	}
	return ms, true
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
	if msg, ok := registry.SchemaViolations(err); ok {
		return errors.New("schema violation " + msg)
	}
	return fmt.Errorf("schema violation: %s", shorten(err.Error(), 300))
}

// jsonSpace is the whitespace JSON allows around a value (RFC 8259).
const jsonSpace = " \t\r\n"

// shorten cuts s to at most n bytes plus "...", never inside a UTF-8
// sequence: the result goes into headers that consumers read as text.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// cutUTF8 returns b's first n bytes or fewer, backing off to the start of
// a UTF-8 sequence.
func cutUTF8(b []byte, n int) []byte {
	if n >= len(b) {
		return b
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}
