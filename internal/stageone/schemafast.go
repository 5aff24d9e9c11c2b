package stageone

import (
	"bytes"
	"fmt"
	"math/big"
	"reflect"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// fastSchema decides the common case of an input's JSON Schema on the
// top-level members the scan finds, without decoding the value again:
// an object schema whose properties are checked by type, enum/const of
// scalars, string lengths and numeric bounds. It only ever says "valid";
// a record it does not pass (invalid, or not decidable from the raw bytes)
// goes to the full validator, which gives every rejected record its
// verdict and its reason text.
//
// It is built from the compiled schema, the library's own reading of the
// JSON for the schema's draft (draft 4's boolean exclusiveMinimum folded
// into the bound, format kept only where it asserts, the siblings of a
// draft-7 $ref dropped, numbers exact as big.Rat), so it has no second
// reading of the keywords to drift from the validator's. Every exported
// field of the compiled schema outside the subset must be zero, so a
// keyword the subset lacks (and a field a later library version adds)
// means no fast path.
type fastSchema struct {
	props    map[string]int // member name -> index in checks
	names    []string       // the names by index, when few: compared in turn
	checks   []fastCheck
	required uint64 // the bits of the required names
	closed   bool   // additionalProperties: false
}

// fastCheck is one top-level name's check: its property schema (when
// prop), and its bit in fastSchema.required (0 when not required).
type fastCheck struct {
	prop  bool
	bit   uint64
	never bool           // the property schema is false
	types uint16         // the allowed kinds (kind bits below); 0: any
	enums [][]fastScalar // each list: the value equals one of them (enum, const)
	// minLen and maxLen count code points; -1: none.
	minLen, maxLen int
	lows, highs    []fastBound
	strict         bool // something needs a string's content (length, enum)
	numeric        bool // something needs a number's value (bounds, enum, integer but not number)
}

// fastBound is a numeric bound and whether it excludes its value.
type fastBound struct {
	d         decimal
	exclusive bool
}

// fastScalar is an enum or const item: a kind, and for a string its
// text, for a number its value.
type fastScalar struct {
	kind uint16
	str  string
	num  decimal
}

// The JSON kinds of a raw value, as bits; kindInteger is only in a type
// set (a number whose value is an integer).
const (
	kindNull uint16 = 1 << iota
	kindBoolean
	kindNumber
	kindInteger
	kindString
	kindArray
	kindObject
)

// An enum or const item's boolean value.
const (
	itemFalse = kindBoolean
	itemTrue  = kindObject << 1
)

var kindNames = map[string]uint16{
	"null": kindNull, "boolean": kindBoolean, "number": kindNumber, "integer": kindInteger,
	"string": kindString, "array": kindArray, "object": kindObject,
}

// maxFastComposite bounds the raw size of an object or array member the
// fast path passes: the validator's decode (encoding/json) refuses
// nesting past 10000 levels, which the scan accepts, and a member value
// shorter than 20000 bytes cannot nest that deep (two bytes a level,
// one more for the top-level object).
const maxFastComposite = 16 << 10

// The compiled schema's fields the subset reads, at the top and in a
// property's schema; annotations (and the draft and location) are read by
// no validation. Every other exported field must be zero.
var (
	annotationFields = []string{"DraftVersion", "Location", "ID", "Title", "Description", "Default", "Comment", "ReadOnly", "WriteOnly", "Examples", "Deprecated"}
	rootFields       = fieldSet(annotationFields, "Types", "Required", "Properties", "AdditionalProperties")
	propFields       = fieldSet(annotationFields, "Bool", "Types", "Enum", "Const", "MinLength", "MaxLength", "Minimum", "Maximum", "ExclusiveMinimum", "ExclusiveMaximum")
)

// fieldSet: a field renamed by a library upgrade would be missing here
// and so refused (no fast path), never skipped; TestFastSchemaFields
// checks that every name is still a field.
func fieldSet(base []string, more ...string) map[string]bool {
	m := map[string]bool{}
	for _, f := range append(append([]string(nil), base...), more...) {
		m[f] = true
	}
	return m
}

// onlyFields: every exported field of s outside allowed is zero.
func onlyFields(s *jsonschema.Schema, allowed map[string]bool) bool {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && !allowed[f.Name] && !v.Field(i).IsZero() {
			return false
		}
	}
	return true
}

// newFastSchema is the fast path of s, nil when s uses anything outside
// the subset.
func newFastSchema(s *jsonschema.Schema) *fastSchema {
	if s == nil || !onlyFields(s, rootFields) {
		return nil
	}
	if s.Types != nil && !s.Types.IsEmpty() && !typesOf(*s.Types).has(kindObject) {
		return nil // no object passes: every record goes to the validator
	}
	f := &fastSchema{props: map[string]int{}}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		f.closed = !a
	default:
		return nil // a schema for the other members
	}
	for name, ps := range s.Properties {
		c, ok := newFastCheck(ps)
		if !ok {
			return nil
		}
		f.props[name] = len(f.checks)
		f.checks = append(f.checks, c)
	}
	for _, name := range s.Required {
		i, ok := f.props[name]
		if !ok {
			i = len(f.checks)
			f.props[name] = i
			f.checks = append(f.checks, fastCheck{minLen: -1, maxLen: -1})
		}
		if f.checks[i].bit != 0 {
			continue // named twice
		}
		n := 0
		for _, c := range f.checks {
			if c.bit != 0 {
				n++
			}
		}
		if n == 64 {
			return nil
		}
		f.checks[i].bit = 1 << n
		f.required |= 1 << n
	}
	if len(f.checks) <= 8 {
		f.names = make([]string, len(f.checks))
		for name, i := range f.props {
			f.names[i] = name
		}
	}
	return f
}

// check is the index of name's check, -1 if none: a few names are
// compared in turn (most differ in length), more are looked up.
func (f *fastSchema) check(name []byte) int {
	if f.names == nil {
		if i, ok := f.props[string(name)]; ok {
			return i
		}
		return -1
	}
	for i, n := range f.names {
		if n == string(name) {
			return i
		}
	}
	return -1
}

type kindSet uint16

func (k kindSet) has(kind uint16) bool { return uint16(k)&kind != 0 }

func typesOf(t jsonschema.Types) kindSet {
	var k uint16
	for _, n := range t.ToStrings() {
		k |= kindNames[n]
	}
	return kindSet(k)
}

// newFastCheck is a property schema's check; ok is false outside the
// subset.
func newFastCheck(s *jsonschema.Schema) (c fastCheck, ok bool) {
	c = fastCheck{prop: true, minLen: -1, maxLen: -1}
	if s == nil || !onlyFields(s, propFields) {
		return c, false
	}
	if s.Bool != nil {
		c.never = !*s.Bool
		return c, true
	}
	if s.Types != nil {
		c.types = uint16(typesOf(*s.Types))
		c.numeric = kindSet(c.types).has(kindInteger) && !kindSet(c.types).has(kindNumber)
	}
	if s.Const != nil {
		sc, ok := newFastScalar(*s.Const)
		if !ok {
			return c, false
		}
		c.enums = append(c.enums, []fastScalar{sc})
	}
	if s.Enum != nil {
		var items []fastScalar
		for _, v := range s.Enum.Values {
			sc, ok := newFastScalar(v)
			if !ok {
				return c, false
			}
			items = append(items, sc)
		}
		c.enums = append(c.enums, items)
	}
	if len(c.enums) > 0 {
		c.strict, c.numeric = true, true
	}
	if s.MinLength != nil {
		c.minLen, c.strict = *s.MinLength, true
	}
	if s.MaxLength != nil {
		c.maxLen, c.strict = *s.MaxLength, true
	}
	for _, b := range []struct {
		r         *big.Rat
		low, excl bool
	}{{s.Minimum, true, false}, {s.ExclusiveMinimum, true, true}, {s.Maximum, false, false}, {s.ExclusiveMaximum, false, true}} {
		if b.r == nil {
			continue
		}
		d, ok := ratDecimal(b.r)
		if !ok {
			return c, false
		}
		c.numeric = true
		if b.low {
			c.lows = append(c.lows, fastBound{d, b.excl})
		} else {
			c.highs = append(c.highs, fastBound{d, b.excl})
		}
	}
	return c, true
}

// newFastScalar is an enum or const item as the validator compares it
// (its equals: strings by bytes, numbers by exact value, booleans,
// null); ok is false for an object or array.
func newFastScalar(v any) (fastScalar, bool) {
	switch v := v.(type) {
	case nil:
		return fastScalar{kind: kindNull}, true
	case bool:
		if v {
			return fastScalar{kind: itemTrue}, true
		}
		return fastScalar{kind: itemFalse}, true
	case string:
		return fastScalar{kind: kindString, str: v}, true
	case map[string]any, []any:
		return fastScalar{}, false
	}
	// A number, read as the validator reads it.
	r, ok := new(big.Rat).SetString(fmt.Sprint(v))
	if !ok {
		return fastScalar{}, false
	}
	d, ok := ratDecimal(r)
	return fastScalar{kind: kindNumber, num: d}, ok
}

// fastState is one record's progress through a fastSchema: the required
// names seen, and whether a member has failed or could not be decided.
type fastState struct {
	seen uint64
	off  bool
}

// member checks one top-level member. A repeated name is checked at each
// occurrence: when all pass, the last, which the validator's decode
// keeps, passes too.
func (f *fastSchema) member(st *fastState, key []byte, escaped bool, raw []byte) {
	if escaped {
		st.off = true // the name would have to be decoded
		return
	}
	if (raw[0] == '{' || raw[0] == '[') && len(raw) > maxFastComposite {
		st.off = true
		return
	}
	i := f.check(key[1 : len(key)-1])
	if i < 0 {
		st.off = st.off || f.closed // an additional property
		return
	}
	c := &f.checks[i]
	st.seen |= c.bit
	switch {
	case !c.prop:
		st.off = st.off || f.closed // required, but not among the properties
	case !c.valid(raw):
		st.off = true
	}
}

// valid: the whole record passed, as far as the fast path can tell.
func (f *fastSchema) valid(st *fastState) bool {
	return !st.off && st.seen&f.required == f.required
}

// valid: raw, a member's value the scan has checked, passes the
// property's schema.
func (c *fastCheck) valid(raw []byte) bool {
	if c.never {
		return false
	}
	kind := rawKind(raw)
	var num decimal
	var digits [maxFastDigits]byte
	if kind == kindNumber && c.numeric {
		var ok bool
		if num, ok = parseDecimal(raw, digits[:0]); !ok {
			return false
		}
	}
	if c.types != 0 && !kindSet(c.types).has(kind) {
		if kind != kindNumber || !kindSet(c.types).has(kindInteger) || !num.isInteger() {
			return false
		}
	}
	if kind == kindString && c.strict {
		s := raw[1 : len(raw)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			return false // escaped: the validator decodes it
		}
		if c.minLen >= 0 || c.maxLen >= 0 {
			n := utf8.RuneCount(s)
			if c.minLen >= 0 && n < c.minLen || c.maxLen >= 0 && n > c.maxLen {
				return false
			}
		}
	}
	if kind == kindNumber {
		for _, b := range c.lows {
			if cmp := num.cmp(b.d); cmp < 0 || cmp == 0 && b.exclusive {
				return false
			}
		}
		for _, b := range c.highs {
			if cmp := num.cmp(b.d); cmp > 0 || cmp == 0 && b.exclusive {
				return false
			}
		}
	}
	for _, items := range c.enums {
		if !oneOf(items, kind, raw, num) {
			return false
		}
	}
	return true
}

// oneOf: the value (its kind, raw bytes, and number) equals one of items.
// A string here has no escapes (valid checked it).
func oneOf(items []fastScalar, kind uint16, raw []byte, num decimal) bool {
	for i := range items {
		it := &items[i]
		switch {
		case kind == kindString && it.kind == kindString:
			if string(raw[1:len(raw)-1]) == it.str {
				return true
			}
		case kind == kindNumber && it.kind == kindNumber:
			if num.cmp(it.num) == 0 {
				return true
			}
		case kind == kindBoolean && it.kind == itemTrue && raw[0] == 't',
			kind == kindBoolean && it.kind == itemFalse && raw[0] == 'f':
			return true
		case kind == kindNull && it.kind == kindNull:
			return true
		}
	}
	return false
}

// rawKind is the kind of a raw JSON value the scan has checked.
func rawKind(raw []byte) uint16 {
	switch raw[0] {
	case '"':
		return kindString
	case '{':
		return kindObject
	case '[':
		return kindArray
	case 't', 'f':
		return kindBoolean
	case 'n':
		return kindNull
	}
	return kindNumber
}

// decimal is a number's exact value: 0.digits × 10^point, negative when
// neg; digits has no leading or trailing zeros, and is empty for zero
// (so -0 is 0, as for the validator's big.Rat).
type decimal struct {
	neg    bool
	digits []byte
	point  int
}

// maxFastDigits bounds the significant digits of a number the fast path
// compares; maxFastExp its written exponent. Beyond either the validator
// decides.
const (
	maxFastDigits = 64
	maxFastExp    = 100000
)

// parseDecimal reads a JSON number the scan has checked into a decimal
// whose digits are appended to buf; ok is false past the bounds above.
func parseDecimal(raw []byte, buf []byte) (decimal, bool) {
	var d decimal
	i := 0
	if raw[0] == '-' {
		d.neg, i = true, 1
	}
	intStart := i
	for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
		i++
	}
	intDigits := raw[intStart:i]
	var frac []byte
	if i < len(raw) && raw[i] == '.' {
		fs := i + 1
		for i = fs; i < len(raw) && raw[i] >= '0' && raw[i] <= '9'; i++ {
		}
		frac = raw[fs:i]
	}
	exp := 0
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		eneg := false
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			eneg = raw[i] == '-'
			i++
		}
		for ; i < len(raw); i++ {
			if exp = exp*10 + int(raw[i]-'0'); exp > maxFastExp {
				return d, false
			}
		}
		if eneg {
			exp = -exp
		}
	}
	// Leading zeros move the point; trailing zeros do not count.
	d.point = len(intDigits) + exp
	for len(intDigits) > 0 && intDigits[0] == '0' {
		intDigits, d.point = intDigits[1:], d.point-1
	}
	if len(intDigits) == 0 {
		for len(frac) > 0 && frac[0] == '0' {
			frac, d.point = frac[1:], d.point-1
		}
	}
	if len(intDigits)+len(frac) > maxFastDigits {
		return d, false
	}
	buf = append(append(buf, intDigits...), frac...)
	for len(buf) > 0 && buf[len(buf)-1] == '0' {
		buf = buf[:len(buf)-1]
	}
	d.digits = buf
	if len(buf) == 0 {
		d.neg, d.point = false, 0
	}
	return d, true
}

// ratDecimal is a schema's number (a big.Rat from a JSON number, so a
// decimal fraction) as a decimal; ok is false when it is not a decimal
// fraction or too large to be worth it.
func ratDecimal(r *big.Rat) (decimal, bool) {
	if r.Sign() == 0 {
		return decimal{}, true
	}
	num := new(big.Int).Abs(r.Num())
	den := new(big.Int).Set(r.Denom())
	if num.BitLen() > 4096 || den.BitLen() > 4096 {
		return decimal{}, false
	}
	// den = 2^a 5^b: num/den = num × 10^k / den / 10^k, k = max(a, b).
	k := 0
	ten := big.NewInt(10)
	mod := new(big.Int)
	for den.Cmp(big.NewInt(1)) != 0 {
		if k > 4096 {
			return decimal{}, false
		}
		num.Mul(num, ten)
		k++
		var q big.Int
		q.QuoRem(num, den, mod)
		if mod.Sign() == 0 {
			num.Set(&q)
			den.SetInt64(1)
		}
	}
	s := []byte(num.String())
	d := decimal{neg: r.Sign() < 0, point: len(s) - k}
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	d.digits = s
	return d, true
}

// isInteger: the value has no fractional part (as big.Rat.IsInt).
func (d decimal) isInteger() bool {
	return len(d.digits) <= d.point || len(d.digits) == 0
}

// cmp compares d and e exactly: -1, 0 or +1.
func (d decimal) cmp(e decimal) int {
	ds, es := d.sign(), e.sign()
	if ds != es {
		if ds < es {
			return -1
		}
		return 1
	}
	if ds == 0 {
		return 0
	}
	m := d.cmpAbs(e)
	if d.neg {
		return -m
	}
	return m
}

func (d decimal) sign() int {
	switch {
	case len(d.digits) == 0:
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmpAbs compares |d| and |e|, both non-zero: the larger point is the
// larger magnitude (the first digit is not zero), then the digits in
// order, a missing digit a zero.
func (d decimal) cmpAbs(e decimal) int {
	if d.point != e.point {
		if d.point < e.point {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(d.digits, e.digits); c != 0 {
		return c // a proper prefix is smaller: the other has a non-zero digit more
	}
	return 0
}
