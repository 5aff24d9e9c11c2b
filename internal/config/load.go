package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Pos is a place in a config file, 1-based.
type Pos struct {
	Line, Col int
}

// Problem is one mistake in a config file, printed as FILE:LINE:COL: message.
type Problem struct {
	File string
	Pos  Pos
	Msg  string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Pos.Line, p.Pos.Col, p.Msg)
}

// ConfigError holds every problem found in one config file.
type ConfigError struct {
	Problems []Problem
}

func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// doc is a parsed config file: the decoded Config and where each of its
// values stands in the file, by path ("routes[1].when").
type doc struct {
	file     string
	dir      string
	src      []byte
	cfg      Config
	pos      map[string]Pos        // value positions
	keyPos   map[string]Pos        // key positions
	nodes    map[string]*yaml.Node // value nodes, to tell an explicit 0 from an absent field
	problems []Problem
	warnings []Problem               // what loads but likely does not do what was meant
	parsed   bool                    // the YAML itself parsed
	fields   *fieldTypes             // what the inputs' JSON Schemas say about fields; nil without
	schemas  map[string]SchemaFields // writer schemas by input topic (LoadFileWithFields)
	fns      Functions               // the embedding program's functions (LoadWith)
}

func (d *doc) errAt(p Pos, format string, args ...any) {
	d.problems = append(d.problems, Problem{File: d.file, Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// warnAt records a warning at path's value (as at does a problem): the
// config loads, and router validate prints it and still exits 0.
func (d *doc) warnAt(path string, format string, args ...any) {
	d.warnings = append(d.warnings, Problem{File: d.file, Pos: d.lookup(path), Msg: fmt.Sprintf(format, args...)})
}

// at reports a problem at path's value, or at the nearest ancestor that is
// written in the file (a missing field is reported where its parent is).
func (d *doc) at(path string, format string, args ...any) {
	d.errAt(d.lookup(path), format, args...)
}

func (d *doc) lookup(path string) Pos {
	for p := path; ; {
		if pos, ok := d.pos[p]; ok {
			return pos
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			if pos, ok := d.pos[""]; ok {
				return pos
			}
			return Pos{1, 1}
		}
		p = p[:i]
	}
}

func (d *doc) has(path string) bool { _, ok := d.pos[path]; return ok }

func (d *doc) err() error {
	if len(d.problems) == 0 {
		return nil
	}
	sort.SliceStable(d.problems, func(i, j int) bool {
		a, b := d.problems[i].Pos, d.problems[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return &ConfigError{Problems: d.problems}
}

// LoadFile reads and checks a topology file. The returned error is a
// *ConfigError listing every problem, or an I/O error.
func LoadFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read topology: %w", err)
	}
	return Load(path, b)
}

// Load parses and checks a topology from bytes; name is used in messages
// and to resolve relative schema paths.
func Load(name string, b []byte) (*Config, error) {
	return load(name, b, nil, nil)
}

// LoadWith is Load with the Go functions an embedding program registers
// (the public package's WithFunction): its expressions may call them, and
// validation knows them as it knows the built-ins. The Config keeps them
// for compiling (Functions).
func LoadWith(name string, b []byte, fns Functions) (*Config, error) {
	return load(name, b, nil, fns)
}

// LoadFileWithFields is LoadFile with the writer schemas of inputs by
// topic (router validate --registry): a field an expression or
// event_time.field reads that no input's record can have is a problem at
// its line:col, with the nearest name the schemas have.
func LoadFileWithFields(path string, schemas map[string]SchemaFields) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read topology: %w", err)
	}
	return load(path, b, schemas, nil)
}

func load(name string, b []byte, schemas map[string]SchemaFields, fns Functions) (*Config, error) {
	d := parse(name, b)
	d.schemas, d.fns = schemas, fns
	if !d.parsed {
		return nil, d.err()
	}
	// Validate even when decoding found problems, so one run reports
	// every mistake; a field that failed to decode keeps its default.
	d.checkExplicitZeros()
	d.cfg.applyDefaults()
	d.validate()
	if err := d.err(); err != nil {
		return nil, err
	}
	d.cfg.warnings = d.warnings
	d.cfg.fns = fns
	return &d.cfg, nil
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlHints add the likely cause to the YAML parser's terse messages for
// the mistakes people make most in hand-written configs. The parser often
// names the line where the enclosing block starts rather than the faulty
// line, so the hints say where to look.
var yamlHints = map[string]string{
	"mapping values are not allowed in this context": "check the indentation, or quote a value that holds \": \"",
	"did not find expected key":                      "check the indentation of the block that starts here",
	"did not find expected '-' indicator":            "check the indentation of the list that starts here",
	"did not find expected node content":             "a value is missing, or a bracket is not closed",
	"found unexpected end of stream":                 "a quote or bracket is not closed",
	"could not find expected ':'":                    "a key needs \": \" after it, or a quote is not closed",
}

func parse(name string, b []byte) *doc {
	d := &doc{file: name, dir: dirOf(name), src: b, pos: map[string]Pos{}, keyPos: map[string]Pos{}, nodes: map[string]*yaml.Node{}}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		d.yamlError(err)
		return d
	}
	if len(root.Content) == 0 || (root.Content[0].Kind == yaml.ScalarNode && root.Content[0].Tag == "!!null") {
		d.errAt(Pos{1, 1}, "empty topology file: expected a mapping with application_id, inputs, routes, routing and dirty")
		return d
	}
	if line := secondDocument(b); line > 0 {
		// yaml.Unmarshal reads the first document only: routes in a
		// second one would be ignored without a word.
		d.errAt(Pos{line, 1}, "a topology file holds one YAML document; remove this \"---\" and what follows, or merge it into the first")
		return d
	}
	top := root.Content[0]
	for top.Kind == yaml.AliasNode && top.Alias != nil {
		top = top.Alias
	}
	if top.Kind != yaml.MappingNode {
		// Every other check would only repeat that each field is missing.
		d.errAt(Pos{top.Line, top.Column}, "a topology must be a mapping of fields (application_id, inputs, routes, ...), got %s", kindName(top))
		return d
	}
	d.parsed = true
	d.interpolate(top) // ${VAR} and ${VAR:default} in values (interpolate.go)
	d.decode(top, reflect.ValueOf(&d.cfg).Elem(), "")
	return d
}

// secondDocument returns the line where a second, non-empty YAML document
// starts, or 0 when there is none. A trailing "---" with nothing after it
// is harmless and not reported.
func secondDocument(b []byte) int {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var first, second yaml.Node
	if dec.Decode(&first) != nil || dec.Decode(&second) != nil {
		return 0 // io.EOF, or a syntax error the first parse reported if it mattered
	}
	if len(second.Content) == 0 || (second.Content[0].Tag == "!!null" && second.Content[0].Value == "") {
		return 0
	}
	return max(second.Line, 1)
}

// yamlError reports a YAML syntax error. The parser gives one line and no
// column, and for a broken block the line its block starts on: the line
// that broke it is found (badYAMLLine) and the column is its first
// character (the second colon of "key: a: b").
func (d *doc) yamlError(err error) {
	msg := err.Error()
	line := 1
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		// "unknown anchor 'x' referenced" comes without a line: find the alias.
		if m := unknownAnchorRe.FindStringSubmatch(msg); m != nil {
			if i := bytes.Index(d.src, []byte("*"+m[1])); i >= 0 {
				line = 1 + bytes.Count(d.src[:i], []byte("\n"))
			}
		}
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	col := 1
	if bad, ok := badYAMLLine(d.src, line, msg); ok {
		col = firstNonBlank(d.src, bad)
		if msg == "mapping values are not allowed in this context" {
			col = secondColon(d.src, bad, col)
		}
		if bad != line {
			msg += fmt.Sprintf(" (check this line's indentation: it is inside the block that starts at line %d)", line)
			line = bad
			d.errAt(Pos{line, col}, "invalid YAML: %s", msg)
			return
		}
	}
	switch hint, ok := yamlHints[msg]; {
	case ok:
		msg += " (" + hint + ")"
	case unknownAnchorRe.MatchString(msg):
		msg += " (an alias *name needs an anchor &name earlier in the file)"
	}
	// A tab in the indentation is reported on the line before the tab
	// when the parser was still closing that line's block.
	for _, l := range []int{line, line + 1} {
		if lineHasTabIndent(d.src, l) {
			line = l
			if !strings.Contains(msg, "tab") {
				msg += " (YAML does not allow tabs for indentation; use spaces)"
			}
			break
		}
	}
	d.errAt(Pos{line, col}, "invalid YAML: %s", msg)
}

// blockErrors are the parser's messages that name the line where the
// enclosing block starts rather than the line that broke it (yaml.v3
// keeps only the context's line): badYAMLLine finds that one.
var blockErrors = map[string]bool{
	"did not find expected key":                      true,
	"did not find expected '-' indicator":            true,
	"mapping values are not allowed in this context": true,
}

// badYAMLLine is the line a block error is on: the first line (from the
// one the parser named on) at which the file's beginning stops parsing.
// Block YAML is read line by line, so a beginning that ends before the
// faulty line parses; one that takes it in fails.
func badYAMLLine(src []byte, from int, msg string) (int, bool) {
	if !blockErrors[msg] {
		return 0, false
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	fails := func(n int) bool {
		var v yaml.Node
		return yaml.Unmarshal(bytes.Join(lines[:n], nil), &v) != nil
	}
	lo, hi := from, len(lines) // fails(hi); find the least n in [lo, hi] that fails
	if lo < 1 || lo > hi || !fails(hi) {
		return 0, false
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, true
}

// secondColon is the column of the ": " after a line's key (key: a: b),
// the one the parser refuses; col when there is none.
func secondColon(src []byte, line, col int) int {
	l := bytes.Split(src, []byte("\n"))[line-1]
	first := bytes.Index(l, []byte(": "))
	if first < 0 {
		return col
	}
	if second := bytes.Index(l[first+2:], []byte(":")); second >= 0 {
		return first + 2 + second + 1
	}
	return col
}

// firstNonBlank is the column of the first character on line that is
// not a space or a tab (1 for a blank line).
func firstNonBlank(src []byte, line int) int {
	lines := bytes.Split(src, []byte("\n"))
	if line < 1 || line > len(lines) {
		return 1
	}
	l := lines[line-1]
	if n := len(l) - len(bytes.TrimLeft(l, " \t")); n < len(l) {
		return n + 1
	}
	return 1
}

func isZero(s string) bool {
	i, err := strconv.ParseInt(s, 0, 64)
	return err == nil && i == 0
}

var unknownAnchorRe = regexp.MustCompile(`^unknown anchor '([^']*)' referenced$`)

func lineHasTabIndent(src []byte, line int) bool {
	lines := bytes.Split(src, []byte("\n"))
	if line < 1 || line > len(lines) {
		return false
	}
	l := lines[line-1]
	return len(bytes.TrimLeft(l, " ")) > 0 && bytes.TrimLeft(l, " ")[0] == '\t'
}

// checkExplicitZeros reports integer fields written as 0. Config uses 0 for
// "not set", so applyDefaults would otherwise turn a written 0 silently
// into the default: a user who writes partitions: 0 made a mistake, and
// one who writes truncate_to: 0 expects no payload, not 64 KiB of it.
func (d *doc) checkExplicitZeros() {
	for _, f := range []struct {
		path string
		v    int64
		def  any
	}{
		{"commit_records", int64(d.cfg.CommitRecords), DefaultCommitRecords},
		{"topics.partitions", int64(d.cfg.Topics.Partitions), DefaultPartitions},
		{"topics.replication_factor", int64(d.cfg.Topics.ReplicationFactor), "-1, the broker default"},
		{"dirty.max_record_bytes", int64(d.cfg.Dirty.MaxRecordBytes), DefaultMaxRecordBytes},
		{"dirty.truncate_to", int64(d.cfg.Dirty.TruncateTo), DefaultTruncateTo},
		{"limits.max_record_bytes", int64(d.cfg.Limits.MaxRecordBytes), "each output topic's max.message.bytes"},
	} {
		if n, ok := d.nodes[f.path]; ok && n.Tag == "!!int" && f.v == 0 && isZero(n.Value) {
			d.at(f.path, "%s must not be 0; remove it to get the default (%v)", f.path, f.def)
		}
	}
}

func dirOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i+1]
	}
	return ""
}

var (
	durationType     = reflect.TypeOf(Duration(0))
	spanType         = reflect.TypeOf(Span(0))
	projectionType   = reflect.TypeOf(Projection(nil))
	topicConfigsType = reflect.TypeOf(TopicConfigs(nil))
)

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}

// decode sets v from n, checking kinds and unknown fields as it goes and
// recording every value's position, so later checks can point at the line.
func (d *doc) decode(n *yaml.Node, v reflect.Value, path string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	d.pos[path] = Pos{n.Line, n.Column}
	d.nodes[path] = n
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // leave the zero value; required-field checks report it
	}
	t := v.Type()
	switch {
	case t == durationType || t == spanType:
		d.decodeDuration(n, v, path)
		return
	case t == projectionType:
		d.decodeProjection(n, v, path)
		return
	case t == topicConfigsType:
		d.decodeTopicConfigs(n, v, path)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		nv := reflect.New(t.Elem())
		d.decode(n, nv.Elem(), path)
		v.Set(nv)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	default:
		d.decodeScalar(n, v, path)
	}
}

// decodeDuration: a Duration (positive) or a Span (zero allowed).
func (d *doc) decodeDuration(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if n.Kind != yaml.ScalarNode {
		d.errAt(Pos{n.Line, n.Column}, "%s: expected a duration such as \"100ms\", got %s", path, kindName(n))
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		d.errAt(Pos{n.Line, n.Column}, "%s: invalid duration %q (use a unit: \"100ms\", \"5s\")", path, n.Value)
		return
	}
	if dur < 0 && t == spanType {
		d.errAt(Pos{n.Line, n.Column}, "%s: duration must not be negative, got %q", path, n.Value)
		return
	}
	if dur < 0 || (dur == 0 && t == durationType) {
		d.errAt(Pos{n.Line, n.Column}, "%s: duration must be positive, got %q", path, n.Value)
		return
	}
	v.SetInt(int64(dur))
}

// decodeProjection: a mapping of output field to expression, in order.
func (d *doc) decodeProjection(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errAt(Pos{n.Line, n.Column}, "%s: expected a mapping of output field to expression, got %s", path, kindName(n))
		return
	}
	var proj Projection
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := fieldPath(path, k.Value)
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" || k.Value == "" {
			d.errAt(Pos{k.Line, k.Column}, "%s: an output field name must be a non-empty string, got %s", path, kindName(k))
			continue
		}
		if seen[k.Value] {
			d.errAt(Pos{k.Line, k.Column}, "%s: duplicate output field %q", path, k.Value)
			continue
		}
		seen[k.Value] = true
		d.pos[p] = Pos{val.Line, val.Column}
		d.nodes[p] = val
		if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
			d.errAt(Pos{val.Line, val.Column}, "%s: expected an expression, got %s", p, kindName(val))
			continue
		}
		proj = append(proj, Field{Name: k.Value, Expr: val.Value})
	}
	v.Set(reflect.ValueOf(proj))
}

// decodeStruct: a mapping whose keys are the struct's yaml tags; an
// unknown or repeated key is a problem with a suggestion.
func (d *doc) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		d.errAt(Pos{n.Line, n.Column}, "%s: expected a mapping, got %s", orTop(path), kindName(n))
		return
	}
	fields := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			fields[tag] = i
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fi, ok := fields[k.Value]
		if !ok {
			if k.Tag == "!!merge" {
				d.errAt(Pos{k.Line, k.Column}, "%s: YAML merge keys (<<) are not supported; write the fields out", orTop(path))
				continue
			}
			if why, ok := misplaced[path+"."+k.Value]; ok {
				d.errAt(Pos{k.Line, k.Column}, "%s.%s: %s", path, k.Value, why)
				continue
			}
			d.errAt(Pos{k.Line, k.Column}, "%s: unknown field %s%s", orTop(path), kindName(k), suggest(k.Value, fields))
			continue
		}
		if seen[k.Value] {
			d.errAt(Pos{k.Line, k.Column}, "%s: field %q is given twice", orTop(path), k.Value)
			continue
		}
		seen[k.Value] = true
		d.keyPos[join(path, k.Value)] = Pos{k.Line, k.Column}
		d.decode(val, v.Field(fi), join(path, k.Value))
	}
}

func (d *doc) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if n.Kind != yaml.SequenceNode {
		d.errAt(Pos{n.Line, n.Column}, "%s: expected a list, got %s", path, kindName(n))
		return
	}
	s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(s)
}

// decodeMap: a mapping of names to strings (the only map kind the model
// has).
func (d *doc) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if t.Key().Kind() != reflect.String || t.Elem().Kind() != reflect.String {
		d.errAt(Pos{n.Line, n.Column}, "%s: unsupported field type %s", path, t)
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errAt(Pos{n.Line, n.Column}, "%s: expected a mapping of names to strings, got %s", path, kindName(n))
		return
	}
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" || k.Value == "" {
			d.errAt(Pos{k.Line, k.Column}, "%s: a name must be a non-empty string, got %s", path, kindName(k))
			continue
		}
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.errAt(Pos{k.Line, k.Column}, "%s: %q is given twice", path, k.Value)
			continue
		}
		p := fieldPath(path, k.Value)
		d.pos[p] = Pos{val.Line, val.Column}
		e := reflect.New(t.Elem()).Elem()
		d.decode(val, e, p)
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(t.Key()), e)
	}
	v.Set(m)
}

// decodeScalar: a string, an integer that fits its type, or a boolean.
func (d *doc) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	switch t.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.errAt(Pos{n.Line, n.Column}, "%s: expected a string, got %s", path, kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			d.errAt(Pos{n.Line, n.Column}, "%s: expected an integer, got %s", path, kindName(n))
			return
		}
		i, err := strconv.ParseInt(n.Value, 0, t.Bits())
		if err != nil {
			hi := int64(1)<<(t.Bits()-1) - 1
			if strings.HasPrefix(n.Value, "-") {
				d.errAt(Pos{n.Line, n.Column}, "%s: %s is too small (at least %d)", path, n.Value, -hi-1)
			} else {
				d.errAt(Pos{n.Line, n.Column}, "%s: %s is too large (at most %d)", path, n.Value, hi)
			}
			return
		}
		v.SetInt(i)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.errAt(Pos{n.Line, n.Column}, "%s: expected true or false, got %s", path, kindName(n))
			return
		}
		v.SetBool(n.Value == "true" || n.Value == "True" || n.Value == "TRUE")
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.errAt(Pos{n.Line, n.Column}, "%s: expected a number, got %s", path, kindName(n))
			return
		}
		v.SetFloat(f)
	default:
		d.errAt(Pos{n.Line, n.Column}, "%s: unsupported field type %s", path, t)
	}
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fieldPath names an output field under path: routes[0].project.total, or
// routes[0].project["@t x"] when the name is not an identifier, so a name
// holding a newline or a dot cannot garble a one-line message.
func fieldPath(path, name string) string {
	if identRe.MatchString(name) {
		return path + "." + name
	}
	return path + "[" + strconv.Quote(name) + "]"
}

func orTop(path string) string {
	if path == "" {
		return "topology"
	}
	return path
}

// misplaced are settings of one place written in another where they
// mean nothing, and why: said instead of "unknown field".
var misplaced = map[string]string{
	"dirty.slo.max_event_time_lag": "the dirty route has no event-time lag objective: a dirty record may have no event time (reasons invalid_json, missing_event_time, bad_event_time); set max_event_time_lag on a route's slo",
}

// suggest names the known field closest to a misspelt one, or lists the
// known fields when none is close, so the user never has to open the docs
// to learn what may stand there.
func suggest(k string, fields map[string]int) string {
	best, bestD := "", 3
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
		if dd := editDistance(k, f); dd < bestD || (dd == bestD && f < best) {
			best, bestD = f, dd
		}
	}
	if best == "" {
		sort.Strings(names)
		return " (known fields: " + strings.Join(names, ", ") + ")"
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ErrNoBrokers is returned by CheckRunnable when no broker address is set.
var ErrNoBrokers = errors.New("no brokers: set brokers in the topology, SIDESTREAM_BROKERS or --brokers")
