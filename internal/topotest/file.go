package topotest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/sideroute"
)

// File is a test file of `router test`: a topology and cases of
// input records with the records each route must receive.
type File struct {
	Topology string `yaml:"topology"` // relative to the test file
	// Schemas names the writer schema of each registry-backed input (input
	// topic: schema file, relative to the test file), registered under
	// <topic>-value in the in-process registry a case runs with.
	Schemas map[string]string `yaml:"schemas"`
	// Partitions of every input topic (and so of the internal topics)
	// in each case, unless the case says; 0: the topology's
	// topics.partitions (default 6).
	Partitions int32 `yaml:"partitions"`
	// Clock is where the virtual processing-time clock of every case
	// starts (epoch ms, or RFC 3339 text), unless the case says; empty:
	// the real time when the case starts.
	Clock yaml.Node `yaml:"clock"`
	Tests []Case    `yaml:"tests"`
	// Tables are rows of the topology's lookup tables every case starts
	// with, by table name, written in order before the router starts.
	Tables map[string][]TableRow `yaml:"tables"`

	path string
	pos  positions
}

// Case is one test case: its input steps and what each route receives.
type Case struct {
	Name       string    `yaml:"name"`
	Partitions int32     `yaml:"partitions"` // overrides the file's
	Clock      yaml.Node `yaml:"clock"`      // overrides the file's
	// Input is the case's steps, in order: records, and the virtual
	// time steps advance_watermark and advance_time.
	Input []Input `yaml:"input"`
	// Expect maps a route name (as router tail names it: a route, dirty,
	// WINDOW.late, ASSEMBLY.incomplete ...) to its records: a list is the
	// exact set (in any order); {contains: [...]} needs those among
	// others. A route not named must receive nothing.
	Expect map[string]yaml.Node `yaml:"expect"`
	// Wait moves the processing-time clock this much after the last
	// step (as a last advance_time step): virtual, nothing sleeps.
	Wait string `yaml:"wait"`
	// Tables are this case's table rows, written after the file's.
	Tables map[string][]TableRow `yaml:"tables"`

	index int // in the file's tests
}

// Input is one step of a case: a record to write, or a move of virtual
// time (advance_watermark, advance_time), alone.
type Input struct {
	Topic     string  `yaml:"topic"`     // default: the first input
	Partition *int32  `yaml:"partition"` // default: by key, as Kafka's producers do
	Key       *string `yaml:"key"`
	// Value: a string is written as is; anything else as JSON, or, to a
	// registry-backed input, framed with its schema (Avro: encoded).
	Value       yaml.Node         `yaml:"value"`
	ValueFile   string            `yaml:"value_file"`   // raw bytes, relative to the test file
	ValueBase64 string            `yaml:"value_base64"` // raw bytes (a hostile frame)
	SchemaID    int               `yaml:"schema_id"`    // framed instead of the registered id
	Headers     map[string]string `yaml:"headers"`
	Timestamp   int64             `yaml:"timestamp"` // epoch ms; default the case's virtual now
	// AdvanceWatermark moves the event-time watermark of every aligned
	// window to this time (epoch ms, or RFC 3339 text): a mark for
	// every input partition, as if each had read a record of that time.
	AdvanceWatermark yaml.Node `yaml:"advance_watermark"`
	// AdvanceTime moves the processing-time clock by a duration (Go
	// syntax: 30s, 5m): assembly TTLs of time: processing routes, idle
	// sources and quiet windows of idle_timeout.
	AdvanceTime string `yaml:"advance_time"`
}

// expected is one expected record; a field left out is not compared.
type expected struct {
	Key    *string   `yaml:"key"`
	Value  yaml.Node `yaml:"value"`
	Reason string    `yaml:"reason"` // sidestream.reason of dirty, late ... records
	// Error is text the record's error (sidestream.error: why a dirty
	// record is dirty) must contain.
	Error string `yaml:"error"`
	// ValueHas is a JSON object the value must contain: its fields equal,
	// nested objects contained the same way, other fields free (a window
	// result's revision, which depends on how commits cut the input).
	ValueHas map[string]any `yaml:"value_has"`
}

// Problem is one mistake in a test file, at its line and column.
type Problem struct {
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Message string `json:"message"`
}

// FileError holds every problem found in one test file, printed one a
// line as FILE:LINE:COL: message.
type FileError struct {
	File     string
	Problems []Problem
}

func (e *FileError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = at(e.File, p.Line, p.Col) + p.Message
	}
	return strings.Join(lines, "\n")
}

// at is "FILE:LINE:COL: " (or "FILE: " without a line).
func at(file string, line, col int) string {
	if line == 0 {
		return file + ": "
	}
	return fmt.Sprintf("%s:%d:%d: ", file, line, col)
}

// positions are where the parts of a test file stand, by path
// ("tests[0]", "tests[0].input[2]", "tests[0].expect.warn" for the key).
type positions map[string][2]int

func (p positions) at(path string) (line, col int) {
	for {
		if lc, ok := p[path]; ok {
			return lc[0], lc[1]
		}
		if path == "" {
			return 0, 0
		}
		path = path[:max(strings.LastIndexAny(path, ".["), 0)] // "" last: the document
	}
}

// the keys a test file may use, by level.
var (
	fileKeys     = []string{"topology", "schemas", "partitions", "clock", "tests", "tables"}
	caseKeys     = []string{"name", "partitions", "clock", "input", "expect", "wait", "tables"}
	inputKeys    = []string{"topic", "partition", "key", "value", "value_file", "value_base64", "schema_id", "headers", "timestamp", "advance_watermark", "advance_time"}
	expectedKeys = []string{"key", "value", "reason", "error", "value_has"}
)

// ReadFile reads a test file. Every problem it finds (unknown fields,
// wrong types, a case without a name or input) is in a *FileError, each
// at its line and column.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, &FileError{File: path, Problems: yamlProblems(err, nil)}
	}
	fe := &FileError{File: path}
	tf := &File{path: path, pos: positions{}}
	if len(root.Content) == 0 {
		fe.Problems = append(fe.Problems, Problem{Message: "empty test file: it needs topology: FILE and tests"})
		return nil, fe
	}
	doc := root.Content[0]
	walk(doc, "", tf.pos, fe)
	if err := doc.Decode(tf); err != nil {
		fe.Problems = append(fe.Problems, yamlProblems(err, doc)...)
	}
	if len(fe.Problems) == 0 {
		checkFile(tf, fe)
	}
	if len(fe.Problems) > 0 {
		return nil, fe
	}
	return tf, nil
}

// checkFile: a topology, at least one case, each with a name and input.
func checkFile(tf *File, fe *FileError) {
	add := func(path, format string, args ...any) {
		l, c := tf.pos.at(path)
		fe.Problems = append(fe.Problems, Problem{Line: l, Col: c, Message: fmt.Sprintf(format, args...)})
	}
	if tf.Topology == "" || len(tf.Tests) == 0 {
		add("", "a test file needs topology: FILE and at least one test")
	}
	if tf.Partitions < 0 {
		add("partitions", "partitions must be at least 1, got %d", tf.Partitions)
	}
	if _, err := parseTime("clock", &tf.Clock); tf.Clock.Kind != 0 && err != nil {
		add("clock", "%v", err)
	}
	for i := range tf.Tests {
		tc := &tf.Tests[i]
		tc.index = i
		p := fmt.Sprintf("tests[%d]", i)
		if tc.Name == "" || len(tc.Input) == 0 {
			add(p, "tests[%d] needs a name and input records", i)
		}
		if tc.Partitions < 0 {
			add(p+".partitions", "partitions must be at least 1, got %d", tc.Partitions)
		}
		if _, err := parseTime("clock", &tc.Clock); tc.Clock.Kind != 0 && err != nil {
			add(p+".clock", "%v", err)
		}
		for j, in := range tc.Input {
			if err := in.checkStep(); err != nil {
				add(fmt.Sprintf("%s.input[%d]", p, j), "input[%d]: %v", j, err)
			}
		}
	}
}

// walk records every mapping key's and sequence item's position and
// refuses the keys a level does not know.
func walk(n *yaml.Node, path string, pos positions, fe *FileError) {
	if _, ok := pos[path]; !ok { // a mapping's value stands at its key
		pos[path] = [2]int{n.Line, n.Column}
	}
	switch {
	case n.Kind == yaml.MappingNode:
		known := keysOf(path)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := k.Value
			if path != "" {
				kp = path + "." + k.Value
			}
			if known != nil && !contains(known, k.Value) {
				fe.Problems = append(fe.Problems, Problem{Line: k.Line, Col: k.Column,
					Message: fmt.Sprintf("unknown field %q (known: %s)", k.Value, strings.Join(known, ", "))})
				continue
			}
			pos[kp] = [2]int{k.Line, k.Column}
			if descend(path, k.Value) {
				walk(v, kp, pos, fe)
			}
		}
	case n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			walk(c, path+"["+strconv.Itoa(i)+"]", pos, fe)
		}
	}
}

var (
	reCase     = regexp.MustCompile(`^tests\[\d+\]$`)
	reInput    = regexp.MustCompile(`^tests\[\d+\]\.input\[\d+\]$`)
	reExpected = regexp.MustCompile(`^tests\[\d+\]\.expect\.[^.]+(\.contains)?\[\d+\]$`)
	reExpect   = regexp.MustCompile(`^tests\[\d+\]\.expect\.[^.]+$`)
)

// keysOf is what the mapping at path may hold (nil: anything).
func keysOf(path string) []string {
	switch {
	case path == "":
		return fileKeys
	case reCase.MatchString(path):
		return caseKeys
	case reInput.MatchString(path):
		return inputKeys
	case reExpected.MatchString(path):
		return expectedKeys
	case reTableRow.MatchString(path):
		return tableKeys
	case reExpect.MatchString(path):
		return []string{"contains"}
	}
	return nil
}

// descend: walk into everything but values, headers and schemas.
func descend(path, key string) bool {
	switch key {
	case "value", "value_has", "headers", "advance_watermark", "clock":
		return false
	}
	return path != "schemas"
}

var reLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// yamlProblems turns a YAML error into problems at their lines (the
// column of the first node on that line, when doc has one).
func yamlProblems(err error, doc *yaml.Node) []Problem {
	var te *yaml.TypeError
	msgs := []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	var out []Problem
	for _, m := range msgs {
		sm := reLine.FindStringSubmatch(m)
		if sm == nil {
			out = append(out, Problem{Message: m})
			continue
		}
		l, _ := strconv.Atoi(sm[1])
		out = append(out, Problem{Line: l, Col: colOf(doc, l), Message: sm[2]})
	}
	return out
}

// colOf is the column of the first node on line l under n (1 without).
func colOf(n *yaml.Node, l int) int {
	if n != nil {
		if c := findLine(n, l); c > 0 {
			return c
		}
	}
	return 1
}

func findLine(n *yaml.Node, l int) int {
	if n.Line == l {
		return n.Column
	}
	for _, c := range n.Content {
		if col := findLine(c, l); col > 0 {
			return col
		}
	}
	return 0
}

// checkStep: a step is a record or one move of virtual time, alone.
func (in *Input) checkStep() error {
	wm, tm := in.AdvanceWatermark.Kind != 0, in.AdvanceTime != ""
	if !wm && !tm {
		return nil
	}
	record := in.Topic != "" || in.Partition != nil || in.Key != nil || in.Value.Kind != 0 || in.ValueFile != "" ||
		in.ValueBase64 != "" || in.SchemaID != 0 || len(in.Headers) > 0 || in.Timestamp != 0
	if record || (wm && tm) {
		return errors.New("advance_watermark and advance_time are steps of their own: give one, alone in its item")
	}
	if tm {
		if _, err := parseAdvance(in.AdvanceTime); err != nil {
			return err
		}
	}
	if wm {
		if _, err := parseTime("advance_watermark", &in.AdvanceWatermark); err != nil {
			return err
		}
	}
	return nil
}

// topologyPath is the test file's topology, relative to the test file.
func (tf *File) topologyPath() string {
	if filepath.IsAbs(tf.Topology) {
		return tf.Topology
	}
	return filepath.Join(filepath.Dir(tf.path), tf.Topology)
}

// Check reads a test file and checks its cases against the topology it
// names, without running them: what ReadFile checks, and that every
// route an expect: names exists in the topology (each bad one at its
// line and column). It returns the file read (nil when it could not
// be) and every problem found, nil when there is none; a topology that
// does not compile is not checked against. `router validate` calls it
// on a test file, then validates the topology.
func Check(path string) (*File, error) {
	tf, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	top, err := checkTopology(tf)
	if err != nil {
		// The topology's own problems are for its validation to report
		// (router validate validates it next), at its own lines.
		return tf, nil
	}
	fe := &FileError{File: path}
	checkTables(tf, top, func(p, format string, args ...any) {
		l, c := tf.pos.at(p)
		fe.Problems = append(fe.Problems, Problem{Line: l, Col: c, Message: fmt.Sprintf(format, args...)})
	})
	for _, tc := range tf.Tests {
		for _, name := range sortedKeys(tc.Expect) {
			if _, err := sideroute.Resolve(top, name); err != nil {
				l, c := tf.pos.at(fmt.Sprintf("tests[%d].expect.%s", tc.index, name))
				fe.Problems = append(fe.Problems, Problem{Line: l, Col: c, Message: fmt.Sprintf("tests[%d] (%s): expect: %v", tc.index, tc.Name, err)})
			}
		}
	}
	if len(fe.Problems) > 0 {
		return tf, fe
	}
	return tf, nil
}

// checkTopology compiles the test file's topology offline, as router
// test would run it (the in-process registry's URL stands in for a
// registry-backed input's).
func checkTopology(tf *File) (*plan.Plan, error) {
	path := tf.topologyPath()
	cfg, err := config.LoadFile(path)
	if err != nil {
		return nil, err
	}
	o := config.Overrides{Brokers: []string{"127.0.0.1:9092"}}
	for _, in := range cfg.Inputs {
		if config.RegistryFormat(in.Format) {
			o.Registry = config.RegistryOverrides{URL: "http://127.0.0.1:8081"}
		}
	}
	return compileTopology(cfg, path, o)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
