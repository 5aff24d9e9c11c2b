package stageone

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/wire"
)

// compileSchema compiles a schema given as text with a compiler set up as
// topology's (the defaults: the latest draft when $schema is absent,
// format asserted where the draft says so).
func compileSchema(text string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	const url = "https://sidestream.test/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

func mustSchema(t testing.TB, text string) *jsonschema.Schema {
	t.Helper()
	s, err := compileSchema(text)
	if err != nil {
		t.Fatalf("compile %s: %v", text, err)
	}
	return s
}

// fastValid is the fast path's answer on a whole value, as decodeOnce
// asks it: only when the scan succeeded.
func fastValid(f *fastSchema, value []byte) bool {
	var st fastState
	ok := eachMember(value, func(key []byte, esc bool, raw []byte) {
		if !st.off {
			f.member(&st, key, esc, raw)
		}
	})
	return ok && f.valid(&st)
}

// libraryValid is the validator's verdict, the full path of checkSchema.
func libraryValid(s *jsonschema.Schema, value []byte) (bool, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return false, err
	}
	err = s.Validate(inst)
	return err == nil, err
}

func exampleSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	text, err := os.ReadFile(examplesDir + "schemas/log-event.json")
	if err != nil {
		t.Fatal(err)
	}
	return mustSchema(t, string(text))
}

// TestFastSchemaFields: every field name the subset allows is a field of
// the compiled schema (a rename in a library upgrade would otherwise only
// turn the fast path off).
func TestFastSchemaFields(t *testing.T) {
	typ := reflect.TypeFor[jsonschema.Schema]()
	for _, set := range []map[string]bool{rootFields, propFields} {
		for name := range set {
			if _, ok := typ.FieldByName(name); !ok {
				t.Errorf("jsonschema.Schema has no field %s", name)
			}
		}
	}
}

// TestFastSchemaExample: the example schema has a fast path, and it
// passes every valid event of the generator (the demo's and the
// benchmarks' records), all of which the validator passes too; the
// generator's malformed events are left to the validator (or, not UTF-8,
// to the scan, which refuses what the validator's decode would mend).
func TestFastSchemaExample(t *testing.T) {
	s := exampleSchema(t)
	f := newFastSchema(s)
	if f == nil {
		t.Fatal("examples/schemas/log-event.json has no fast path")
	}
	g := gen.New(7)
	g.BadFraction = 0.2
	var good, bad int
	for range 5000 {
		ev := g.Next()
		lib, _ := libraryValid(s, ev.Value)
		fast := fastValid(f, ev.Value)
		if fast && !lib {
			t.Fatalf("fast path passes %s, the validator refuses it", ev.Value)
		}
		if scans := eachMember(ev.Value, func([]byte, bool, []byte) {}); lib && scans && !fast {
			t.Fatalf("fast path does not pass %s (%s), the validator does", ev.Value, ev.Kind)
		}
		if lib {
			good++
		} else {
			bad++
		}
	}
	if good < 3000 || bad < 500 {
		t.Fatalf("%d valid and %d invalid events: the generator changed", good, bad)
	}
	// The decoder holds the fast path for the schema input.
	if dec := newDecoder(topo(t, withSchema, tsMillis)); dec.fast["in"] == nil {
		t.Fatal("the decoder of a schema input has no fast path")
	}
}

// TestFastSchemaOutsideSubset: a schema with anything the subset lacks has
// no fast path; within it, one is built (annotations, a format the draft
// does not assert and unknown keywords change nothing the validator does).
func TestFastSchemaOutsideSubset(t *testing.T) {
	const d7 = `"$schema": "http://json-schema.org/draft-07/schema#",`
	for _, tc := range []struct {
		schema string
		fast   bool
	}{
		{`{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}`, true},
		{`{"properties": {"a": {"type": ["integer", "null"], "minimum": 0, "exclusiveMaximum": 10}}, "additionalProperties": false}`, true},
		{`{"title": "t", "description": "d", "$comment": "c", "examples": [{}], "default": {}, "$id": "https://x.test/s", "properties": {"a": {"title": "a", "default": 1, "examples": [1], "deprecated": true, "readOnly": true}}}`, true},
		{`{"properties": {"a": {"type": "string", "format": "email"}}}`, true}, // 2020-12: an annotation
		{`{"$schema": "https://json-schema.org/draft/2019-09/schema", "properties": {"a": {"format": "email"}}}`, true},
		{`{"properties": {"a": {"x-unit": "ms"}}, "x-owner": "team"}`, true},
		{`{"properties": {"a": true, "b": false}}`, true},
		{`{"properties": {"a": {"enum": ["x", 1, 2.5, true, null]}, "b": {"const": "y"}}}`, true},
		{`{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"type": "number", "minimum": 0, "exclusiveMinimum": true}}}`, true},
		{`{"type": ["object", "null"], "properties": {"a": {"type": "object"}, "b": {"type": "array"}}}`, true},

		{`{` + d7 + ` "properties": {"a": {"type": "string", "format": "email"}}}`, false}, // draft 7 asserts it
		{`{"$ref": "#/$defs/e", "$defs": {"e": {"type": "object"}}}`, false},
		{`{"properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}}`, false},
		{`{"allOf": [{"required": ["a"]}]}`, false},
		{`{"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}`, false},
		{`{"oneOf": [{"required": ["a"]}]}`, false},
		{`{"not": {"required": ["a"]}}`, false},
		{`{"if": {"required": ["a"]}, "then": {"required": ["b"]}}`, false},
		{`{"patternProperties": {"^x-": {"type": "string"}}}`, false},
		{`{"additionalProperties": {"type": "string"}}`, false},
		{`{"unevaluatedProperties": false}`, false},
		{`{"propertyNames": {"maxLength": 3}}`, false},
		{`{"minProperties": 1}`, false},
		{`{"maxProperties": 3}`, false},
		{`{"dependentRequired": {"a": ["b"]}}`, false},
		{`{"dependentSchemas": {"a": {"required": ["b"]}}}`, false},
		{`{` + d7 + ` "dependencies": {"a": ["b"]}}`, false},
		{`{"type": "string"}`, false},
		{`{"enum": [{}]}`, false},
		{`{"const": {"a": 1}}`, false},
		{`{"properties": {"a": {"pattern": "^x"}}}`, false},
		{`{"properties": {"a": {"multipleOf": 2}}}`, false},
		{`{"properties": {"a": {"items": {"type": "string"}}}}`, false},
		{`{"properties": {"a": {"minItems": 1}}}`, false},
		{`{"properties": {"a": {"uniqueItems": true}}}`, false},
		{`{"properties": {"a": {"properties": {"b": {"type": "string"}}}}}`, false},
		{`{"properties": {"a": {"required": ["b"]}}}`, false},
		{`{"properties": {"a": {"enum": [[1]]}}}`, false},
		{`{"properties": {"a": {"const": {"b": 1}}}}`, false},
		{`{"properties": {"a": {"anyOf": [{"type": "string"}]}}}`, false},
		{`{"properties": {"a": {"not": {"type": "string"}}}}`, false},
		{`{"properties": {"a": {"$dynamicAnchor": "x"}}}`, false},
		{`{"properties": {"a": {"minimum": 1e5000}}}`, false}, // too large to be worth it
		{`true`, false},
	} {
		s := mustSchema(t, tc.schema)
		if got := newFastSchema(s) != nil; got != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.schema, got, tc.fast)
		}
	}
	if dec := newDecoder(topo(t, tsMillis)); len(dec.fast) != 0 {
		t.Fatalf("an input without a schema has a fast path: %v", dec.fast)
	}
}

// TestFastSchemaReasons: a record the example schema refuses gets the
// dirty stage, reason and message it got before the fast path: the
// decoder with its fast path and the same decoder without one agree on
// every record, valid or not, and the refused ones are refused by the
// validator's words.
func TestFastSchemaReasons(t *testing.T) {
	fast := newDecoder(topo(t, withSchema, tsMillis))
	if fast.fast["in"] == nil {
		t.Fatal("no fast path")
	}
	slow := newDecoder(topo(t, withSchema, tsMillis))
	clear(slow.fast)
	values := []string{
		good,
		`{"id":"e-1","ts":1,"service":"s","message":"m"}`,                                  // required level missing
		strings.Replace(good, `"ERROR"`, `"TRACE"`, 1),                                     // enum
		strings.Replace(good, `1790000000123`, `"yesterday"`, 1),                           // type
		strings.Replace(good, `1790000000123`, `-5`, 1),                                    // minimum
		strings.Replace(good, `1790000000123`, `1.5`, 1),                                   // integer
		strings.Replace(good, `"e-1"`, `""`, 1),                                            // minLength
		strings.Replace(good, `"e-1"`, `"\u0000"`, 1),                                      // escaped: the validator decides (valid)
		strings.Replace(good, `"e-1"`, `7`, 1),                                             // type
		`{"id":"e","ts":1,"level":"INFO","service":"s","message":"m","latency_ms":-0.001}`, // minimum of a fraction
		`{"id":"e","ts":1,"level":"INFO","service":"s","message":"m","latency_ms":"1"}`,
		`{"id":"e","ts":1,"level":"INFO","service":"s","message":"m","user_id":1.0}`, // integer 1.0 is valid
		`{"id":"e","ts":1,"level":"INFO","service":"s","message":"m","user_id":1e400}`,
		`{"id":"e","ts":1,"level":"INFO","service":"s","message":"m","user_id":9007199254740993.5}`,
		`{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"id":"e","ts":1,"level":"INFO","service":"s","message":"m"}`,
		`{"id":"e","ts":1,"level":"INFO","service":"s","message":"m","level":"TRACE"}`, // the last of a repeated key
		`{"id":"e","ts":1,"le\u0076el":"INFO","service":"s","message":"m"}`,
		`{}`,
	}
	var refused, accepted int
	for _, v := range values {
		gerr := fast.decodeOneRecord(t, v)
		werr := slow.decodeOneRecord(t, v)
		if (gerr == nil) != (werr == nil) || gerr != nil && (gerr.Stage != werr.Stage || gerr.Reason != werr.Reason || !sameMessage(gerr, werr)) {
			t.Fatalf("%s: with the fast path %v, without %v", v, gerr, werr)
		}
		if gerr == nil {
			accepted++
			continue
		}
		refused++
		if gerr.Stage == wire.StageSchema && !strings.HasPrefix(gerr.Err.Error(), "schema violation") {
			t.Fatalf("%s: message %q is not the validator's", v, gerr.Err)
		}
	}
	if refused < 10 || accepted < 4 {
		t.Fatalf("%d refused, %d accepted: the cases lost their point", refused, accepted)
	}
}

func (d *decoder) decodeOneRecord(t *testing.T, v string) *RecordError {
	t.Helper()
	_, rerr := d.decode("in", []byte(v), recordTime)
	return rerr
}

// TestFastSchemaManyProperties: past eight names the checks are looked
// up by map, and past 64 required names there is no fast path.
func TestFastSchemaManyProperties(t *testing.T) {
	var props, req []string
	for i := range 20 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"integer"}`, i))
		if i < 10 {
			req = append(req, fmt.Sprintf(`"p%d"`, i))
		}
	}
	s := mustSchema(t, `{"properties":{`+strings.Join(props, ",")+`},"required":[`+strings.Join(req, ",")+`]}`)
	f := newFastSchema(s)
	if f == nil || f.names != nil {
		t.Fatalf("20 properties: fast path %v, names %v", f != nil, f != nil && f.names != nil)
	}
	all := `"p0":0,"p1":1,"p2":2,"p3":3,"p4":4,"p5":5,"p6":6,"p7":7,"p8":8,"p9":9`
	for _, tc := range []struct {
		value string
		fast  bool
	}{
		{`{` + all + `}`, true},
		{`{` + all + `,"p15":15,"other":"x"}`, true},
		{`{` + strings.Replace(all, `"p3":3,`, ``, 1) + `}`, false},
		{`{` + all + `,"p15":"15"}`, false},
	} {
		lib, _ := libraryValid(s, []byte(tc.value))
		if got := fastValid(f, []byte(tc.value)); got != tc.fast || lib != tc.fast {
			t.Errorf("%s: fast path %v, validator %v, want %v", tc.value, got, lib, tc.fast)
		}
	}
	req = req[:0]
	for i := range 65 {
		req = append(req, fmt.Sprintf(`"r%d"`, i))
	}
	if newFastSchema(mustSchema(t, `{"required":[`+strings.Join(req, ",")+`]}`)) != nil {
		t.Fatal("65 required names: a fast path")
	}
	if newFastSchema(mustSchema(t, `{"required":[`+strings.Join(req[:64], ",")+`]}`)) == nil {
		t.Fatal("64 required names: no fast path")
	}
}

// The numbers of the generators: boundaries (0, -0, 1.0, 1e2), the first
// integer float64 cannot hold, fractions that round in binary, and long
// and exponent forms.
var fastNumbers = []string{
	"0", "-0", "0.0", "-0.0", "1", "-1", "1.0", "1.5", "-1.5", "2", "10", "1e1", "1E+1", "100", "1e2", "1.00e2", "0.01", "1e-2", "10e-3",
	"0.1", "0.3", "3", "2.9999999999999999999", "3.0000000000000000001", "5", "99", "-100",
	"9007199254740992", "9007199254740993", "9007199254740993.0", "-9007199254740993", "1790000000123", "123456789012345678901234567890",
	"1e300", "1e400", "-1e400", "1e-400", "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
}

var fastStrings = []string{
	`""`, `"a"`, `"ab"`, `"abc"`, `"abcd"`, `"é"`, `"日本"`, `"😀"`, `"e😀x"`, `"INFO"`, `"ERROR"`, `"\u0061"`, `"a\"b"`, `"\\"`, `"\ud83d\ude00"`, `"\ud800"`,
	`"` + strings.Repeat("x", 70) + `"`, `"` + strings.Repeat("é", 5) + `"`,
}

var fastNames = []string{"a", "b", "c", "é", "k y", ""}

// schemaGen draws a JSON Schema within the subset, for any of the drafts,
// as text for the validator's compiler.
func schemaGen(t *rapid.T) string {
	drafts := []string{"", "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema"}
	draft := rapid.IntRange(0, len(drafts)-1).Draw(t, "draft")
	draft4 := draft == 1
	var ms []string
	if draft != 0 {
		ms = append(ms, fmt.Sprintf(`"$schema":%q`, drafts[draft]))
	}
	ms = append(ms, rapid.SampledFrom([][]string{nil, {`"type":"object"`}, {`"type":["object","null"]`}, {`"title":"t","description":"d"`}}).Draw(t, "top")...)
	var props []string
	for _, name := range fastNames {
		if rapid.Bool().Draw(t, "has "+name) {
			props = append(props, fmt.Sprintf("%q:%s", name, propSchemaGen(t, draft4, draft == 0 || draft == 5)))
		}
	}
	if len(props) > 0 || rapid.Bool().Draw(t, "empty properties") {
		ms = append(ms, `"properties":{`+strings.Join(props, ",")+`}`)
	}
	var req []string
	for _, name := range fastNames {
		if rapid.IntRange(0, 2).Draw(t, "required "+name) == 0 {
			req = append(req, fmt.Sprintf("%q", name))
		}
	}
	if len(req) > 0 {
		ms = append(ms, `"required":[`+strings.Join(req, ",")+`]`)
	}
	if a := rapid.IntRange(0, 2).Draw(t, "additional"); a > 0 {
		ms = append(ms, `"additionalProperties":`+[]string{"", "false", "true"}[a])
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// propSchemaGen draws a property's schema: types, enum, const, lengths,
// bounds (draft 4's exclusive bounds are booleans beside them), and
// annotations (format among them where the draft does not assert it).
func propSchemaGen(t *rapid.T, draft4, formatAnnotation bool) string {
	if !draft4 && rapid.IntRange(0, 12).Draw(t, "boolean schema") == 0 {
		return rapid.SampledFrom([]string{"true", "false"}).Draw(t, "bool")
	}
	types := []string{"string", "integer", "number", "boolean", "null", "object", "array"}
	scalar := func() string {
		switch rapid.IntRange(0, 3).Draw(t, "scalar kind") {
		case 0:
			return rapid.SampledFrom(fastNumbers[:len(fastNumbers)-4]).Draw(t, "enum number")
		case 1:
			return rapid.SampledFrom([]string{"true", "false", "null"}).Draw(t, "enum literal")
		}
		return rapid.SampledFrom(fastStrings).Draw(t, "enum string")
	}
	var ms []string
	switch rapid.IntRange(0, 3).Draw(t, "type form") {
	case 1:
		ms = append(ms, fmt.Sprintf(`"type":%q`, rapid.SampledFrom(types).Draw(t, "type")))
	case 2:
		var ts []string
		for _, ty := range types {
			if rapid.IntRange(0, 2).Draw(t, "in "+ty) == 0 {
				ts = append(ts, fmt.Sprintf("%q", ty))
			}
		}
		if len(ts) == 0 {
			ts = []string{`"number"`}
		}
		ms = append(ms, `"type":[`+strings.Join(ts, ",")+`]`)
	}
	if rapid.IntRange(0, 3).Draw(t, "enum?") == 0 {
		var items []string
		seen := map[string]bool{} // draft 4 wants the items unique, equal numbers included
		for range rapid.IntRange(1, 4).Draw(t, "enum len") {
			if it := scalar(); !seen[scalarKey(it)] {
				seen[scalarKey(it)] = true
				items = append(items, it)
			}
		}
		ms = append(ms, `"enum":[`+strings.Join(items, ",")+`]`)
	}
	if !draft4 && rapid.IntRange(0, 5).Draw(t, "const?") == 0 {
		ms = append(ms, `"const":`+scalar())
	}
	for _, kw := range []string{"minLength", "maxLength"} {
		if rapid.IntRange(0, 3).Draw(t, kw+"?") == 0 {
			ms = append(ms, fmt.Sprintf(`%q:%d`, kw, rapid.IntRange(0, 6).Draw(t, kw)))
		}
	}
	bound := func() string { return rapid.SampledFrom(fastNumbers[:len(fastNumbers)-3]).Draw(t, "bound") }
	for _, kw := range []string{"minimum", "maximum"} {
		if rapid.IntRange(0, 3).Draw(t, kw+"?") != 0 {
			continue
		}
		ms = append(ms, fmt.Sprintf(`%q:%s`, kw, bound()))
		if draft4 && rapid.Bool().Draw(t, "exclusive") {
			ms = append(ms, fmt.Sprintf(`"exclusive%s%s":true`, strings.ToUpper(kw[:1]), kw[1:]))
		}
	}
	if !draft4 {
		for _, kw := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
			if rapid.IntRange(0, 4).Draw(t, kw+"?") == 0 {
				ms = append(ms, fmt.Sprintf(`%q:%s`, kw, bound()))
			}
		}
	}
	if rapid.IntRange(0, 8).Draw(t, "annotated") == 0 {
		ms = append(ms, `"description":"d","default":1,"$comment":"c"`)
		if formatAnnotation {
			ms = append(ms, `"format":"date-time"`)
		}
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// scalarKey is a scalar's value as the validator compares it.
func scalarKey(text string) string {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		panic(err)
	}
	if n, ok := v.(json.Number); ok {
		r, _ := new(big.Rat).SetString(n.String())
		return "n" + r.RatString()
	}
	return fmt.Sprintf("%T %v", v, v)
}

// instanceGen draws an object near a schema over fastNames: each name
// present or not, any kind of value (the boundary numbers, short, long,
// non-ASCII and escaped strings, nested values), extra and repeated
// members, a key written with an escape, JSON whitespace.
func instanceGen(t *rapid.T) string {
	value := func() string {
		switch rapid.IntRange(0, 5).Draw(t, "value kind") {
		case 0, 1:
			return rapid.SampledFrom(fastNumbers).Draw(t, "number")
		case 2, 3:
			return rapid.SampledFrom(fastStrings).Draw(t, "string")
		case 4:
			return rapid.SampledFrom([]string{"true", "false", "null", "{}", "[]", `{"a":1}`, `[1,"x"]`}).Draw(t, "literal")
		}
		return jsonGen(t, 2)
	}
	ws := func() string { return rapid.SampledFrom([]string{"", " ", "\n\t"}).Draw(t, "ws") }
	var ms []string
	names := append(append([]string(nil), fastNames...), "x", "zz")
	for _, name := range names {
		if rapid.IntRange(0, 2).Draw(t, "absent "+name) == 0 {
			continue
		}
		key := fmt.Sprintf("%q", name)
		if name == "a" && rapid.IntRange(0, 5).Draw(t, "escaped key") == 0 {
			key = `"\u0061"`
		}
		for range rapid.IntRange(1, 2).Draw(t, "occurrences") {
			ms = append(ms, ws()+key+ws()+":"+ws()+value()+ws())
		}
	}
	order := rapid.Permutation(ms).Draw(t, "order")
	return "{" + strings.Join(order, ",") + "}"
}

// TestFastSchemaSound: for random schemas within the subset and random
// objects, the fast path passes only what the validator passes; on the
// objects it could decide from the raw bytes (no escapes, short numbers)
// it also passes everything the validator passes, so the property is not
// won by passing nothing.
func TestFastSchemaSound(t *testing.T) {
	var fastPassed, libPassed int
	rapid.Check(t, func(t *rapid.T) {
		text := schemaGen(t)
		s, err := compileSchema(text)
		if err != nil {
			t.Fatalf("the generator drew a schema the validator refuses: %s: %v", text, err)
		}
		f := newFastSchema(s)
		if f == nil && s.Bool != nil {
			return // {} compiles to the schema true: the validator decides, at no cost
		}
		if f == nil {
			t.Fatalf("no fast path for %s", text)
		}
		for range 8 {
			v := []byte(instanceGen(t))
			lib, lerr := libraryValid(s, v)
			fast := fastValid(f, v)
			if fast && !lib {
				t.Fatalf("schema %s\ninstance %s\nfast path: valid; validator: %v", text, v, lerr)
			}
			if lib && !fast && decidable(v) {
				t.Fatalf("schema %s\ninstance %s\nvalidator: valid; the fast path could have said so", text, v)
			}
			if fast {
				fastPassed++
			}
			if lib {
				libPassed++
			}
		}
	})
	if fastPassed == 0 || fastPassed*4 < libPassed {
		t.Fatalf("the fast path passed %d of the %d objects the validator passed", fastPassed, libPassed)
	}
}

// decidable: nothing in v the fast path leaves to the validator on
// purpose: no escapes, no number of more than 64 digits, no repeated
// top-level name (each occurrence must pass, where the validator sees the
// last only).
func decidable(v []byte) bool {
	seen := map[string]bool{}
	repeated := false
	eachMember(v, func(key []byte, _ bool, _ []byte) {
		repeated = repeated || seen[string(key)]
		seen[string(key)] = true
	})
	return !repeated && !bytes.ContainsRune(v, '\\') && !bytes.Contains(v, []byte(fastNumbers[len(fastNumbers)-1]))
}

// TestDecimal: the exact comparison and integer test of the fast path
// agree with math/big (the validator's arithmetic) on every pair of the
// generators' numbers, and a schema's bound read back from its big.Rat
// compares as the number written.
func TestDecimal(t *testing.T) {
	nums := append(append([]string(nil), fastNumbers...), "-0.5", "0.5", "-2.5e-3", "25e-4", "1.23456789e5", "123456.789", "-1E-1")
	rat := func(s string) *big.Rat {
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("big.Rat refuses %s", s)
		}
		return r
	}
	for _, a := range nums {
		da, ok := parseDecimal([]byte(a), nil)
		if !ok {
			if len(a) < 60 {
				t.Fatalf("%s: not parsed", a)
			}
			continue
		}
		ra := rat(a)
		if da.isInteger() != ra.IsInt() {
			t.Fatalf("%s: isInteger %v, big.Rat %v", a, da.isInteger(), ra.IsInt())
		}
		back, ok := ratDecimal(ra)
		if !ok || back.cmp(da) != 0 || da.cmp(back) != 0 {
			t.Fatalf("%s: read back from big.Rat as %+v (%v), parsed %+v", a, back, ok, da)
		}
		for _, b := range nums {
			db, ok := parseDecimal([]byte(b), nil)
			if !ok {
				continue
			}
			if got, want := da.cmp(db), ra.Cmp(rat(b)); got != want {
				t.Fatalf("cmp(%s, %s) = %d, big.Rat says %d", a, b, got, want)
			}
		}
	}
}

// FuzzFastSchema: for any bytes, the fast path of the example schema (and
// of a closed schema with bounds and lengths) passes only values the
// validator passes.
func FuzzFastSchema(f *testing.F) {
	for _, s := range scanSeeds() {
		f.Add([]byte(s))
	}
	g := gen.New(3)
	g.BadFraction = 0.3
	for range 40 {
		f.Add(g.Next().Value)
	}
	for _, s := range []string{
		`{"id":"e","ts":0,"level":"INFO","service":"s","message":""}`,
		`{"id":"e","ts":-0,"level":"INFO","service":"s","message":"","latency_ms":0}`,
		`{"id":"e","ts":1.0,"level":"INFO","service":"s","message":"","user_id":1e2}`,
		`{"id":"e","ts":9007199254740993,"level":"WARN","service":"é","message":"\n"}`,
		`{"id":"\u00e9","ts":1,"level":"ERROR","service":"s","message":"m","extra":[1,{"a":null}]}`,
		`{"id":"e","ts":1e-400,"level":"DEBUG","service":"s","message":"m","latency_ms":-0.0}`,
		`{"a":"abc","n":10,"m":-1}`, `{"a":"ab","n":10.0,"m":-1.0001}`, `{"a":"😀😀","n":9,"m":0}`,
	} {
		f.Add([]byte(s))
	}
	schemas := []*jsonschema.Schema{
		exampleSchema(f),
		mustSchema(f, `{"type":"object","required":["a","n"],"additionalProperties":false,"properties":{
			"a":{"type":"string","minLength":2,"maxLength":3},"n":{"type":"integer","exclusiveMinimum":9,"maximum":10},
			"m":{"type":["number","null"],"minimum":-1,"exclusiveMaximum":0}}}`),
	}
	fasts := make([]*fastSchema, len(schemas))
	for i, s := range schemas {
		if fasts[i] = newFastSchema(s); fasts[i] == nil {
			f.Fatalf("schema %d has no fast path", i)
		}
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		for i, s := range schemas {
			if !fastValid(fasts[i], v) {
				continue
			}
			if ok, err := libraryValid(s, v); !ok {
				t.Fatalf("schema %d: the fast path passes %q, the validator: %v", i, v, err)
			}
		}
	})
}
