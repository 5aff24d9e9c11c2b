package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/aggfn"
)

// The drift tests of the settings spec: each fails when the spec, the
// Config struct, the defaults Load applies, the variables the code reads
// or the reference page is changed without the others.

// yamlPaths are the YAML paths of Config's fields, in declaration order
// (the file's model), list items as "name[]".
func yamlPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name := yamlName(t.Field(i))
		if name == "" {
			continue
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		out = append(out, p)
		ft := t.Field(i).Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, yamlPaths(ft, p)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, yamlPaths(ft.Elem(), p+"[]")...)
		}
	}
	return out
}

func specPaths() []string {
	var out []string
	for _, s := range Settings {
		if s.Path != "" {
			out = append(out, s.Path)
		}
	}
	return out
}

// Every field of Config with a yaml tag has exactly one setting, in the
// struct's order, and every setting of the file is a field.
func TestSettingsCoverConfig(t *testing.T) {
	fields, spec := yamlPaths(reflect.TypeOf(Config{}), ""), specPaths()
	for _, p := range fields {
		if !slices.Contains(spec, p) {
			t.Errorf("Config has %s, which Settings lacks: declare it in settings.go", p)
		}
	}
	for _, p := range spec {
		if !slices.Contains(fields, p) {
			t.Errorf("Settings declares %s, which Config has no yaml field for", p)
		}
	}
	if t.Failed() {
		return
	}
	if !slices.Equal(fields, spec) {
		for i := range fields {
			if fields[i] != spec[i] {
				t.Fatalf("Settings is not in the file's order: at %d it has %s, Config %s", i, spec[i], fields[i])
			}
		}
	}
}

// No path, variable or flag is declared twice; a process setting has a
// flag or a variable; every setting has a type and a doc.
func TestSettingsDeclaredOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Settings {
		for _, k := range []string{"path " + s.Path, "env " + s.Env, "flag " + s.Flag} {
			if strings.HasSuffix(k, " ") {
				continue
			}
			if seen[k] {
				t.Errorf("%s is declared twice", k)
			}
			seen[k] = true
		}
		if s.Path == "" && s.Env == "" && s.Flag == "" {
			t.Errorf("a process setting with neither flag nor variable: %+v", s)
		}
		if s.Type == "" || s.Doc == "" || strings.Contains(s.Doc, "\n") {
			t.Errorf("%s%s: a type and a one-line doc are needed", s.Path, s.Flag)
		}
		if s.Env != "" && !strings.HasPrefix(s.Env, "SIDESTREAM_") {
			t.Errorf("%s: variable %s lacks the SIDESTREAM_ prefix", s.Path, s.Env)
		}
	}
}

// fieldAt resolves a spec path on v, taking the first list element where
// the rest of the path resolves (a route with a window for
// routes[].window.size); path is the concrete path ("routes[1].window.size").
func fieldAt(v reflect.Value, segs []string, prefix string) (reflect.Value, string, bool) {
	name, each := strings.CutSuffix(segs[0], "[]")
	f := fieldByTag(v, name)
	p := join(prefix, name)
	if !f.IsValid() {
		return f, p, false
	}
	if len(segs) == 1 {
		return f, p, true
	}
	if each {
		for i := 0; i < f.Len(); i++ {
			if got, gp, ok := fieldAt(f.Index(i), segs[1:], p+"["+itoa(int64(i))+"]"); ok {
				return got, gp, true
			}
		}
		return f, p, false
	}
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return f, p, false
		}
		f = f.Elem()
	}
	return fieldAt(f, segs[1:], p)
}

// specBase has every section and list of the file once, with only what
// each requires: the defaults of all the rest show in the loaded config.
const specBase = `application_id: spec
inputs:
  - topic: in
routing:
  default: all
routes:
  - name: all
    topic: out
    when: "true"
  - name: counts
    topic: counts
    window:
      type: tumbling
      size: 1m
      late_topic: counts.late
      aggregates:
        - {name: n, fn: count}
      limits:
        max_entries: 10
        overflow_topic: counts.overflow
    slo:
      max_late_share: 0.5
      records: 1000
  - name: orders
    topic: orders
    assemble:
      id: id
      parts:
        - {name: a, source: in}
      ttl: 30s
      incomplete_topic: orders.incomplete
      limits:
        max_entries: 10
        overflow_topic: orders.overflow
  - name: per-service
    topic_from:
      expr: '"logs." + service'
      allow: ["logs.*"]
dirty:
  topic: out.dirty
  slo:
    max_dirty_share: 0.5
    span: 1m
tables:
  - name: merchants
    topic: merchants
    limits: {max_entries: 0, max_bytes: 0}
`

// onRead are the settings whose default their reader applies.
var onRead = map[string]func(c *Config) any{
	"schema_registry.fetch_timeout":  func(c *Config) any { return Duration(c.SchemaRegistry.FetchTimeoutOrDefault()) },
	"schema_registry.unknown_id_ttl": func(c *Config) any { return Span(c.SchemaRegistry.UnknownIDTTLOrDefault()) },
}

// What Load leaves in a file that sets only what is required is,
// setting by setting, the spec's default, and zero where the spec
// states none: a default applied in code alone, or stated in the spec
// alone, fails here.
func TestSettingsDefaultsApplied(t *testing.T) {
	c, err := Load("spec.yaml", []byte(specBase))
	if err != nil {
		t.Fatal(err)
	}
	root := reflect.ValueOf(c).Elem()
	for _, s := range Settings {
		if s.Path == "" || s.Type == tSection || s.Type == tItems {
			continue
		}
		f, concrete, ok := fieldAt(root, strings.Split(s.Path, "."), "")
		if !ok {
			t.Errorf("%s: specBase has no place for it", s.Path)
			continue
		}
		if _, inFile := c.src.pos[concrete]; inFile {
			continue // the base sets it
		}
		got := f.Interface()
		if read, ok := onRead[s.Path]; ok != s.OnRead {
			t.Errorf("%s: OnRead %v, but the test knows no reader for it", s.Path, s.OnRead)
			continue
		} else if ok {
			got = read(c)
		}
		want := reflect.New(f.Type()).Elem()
		if s.Default != "" {
			if err := setFromText(want, s.Default); err != nil {
				t.Errorf("%s: default %q: %v", s.Path, s.Default, err)
				continue
			}
		}
		w := want.Interface()
		if s.OnRead {
			w = reflect.Indirect(want).Interface()
		}
		if !reflect.DeepEqual(deref(got), deref(w)) {
			t.Errorf("%s: Load leaves %v, the spec's default is %q", s.Path, deref(got), s.Default)
		}
	}
}

func deref(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return rv.Elem().Interface()
	}
	return v
}

// The types the page names match the Go fields'.
func TestSettingsTypes(t *testing.T) {
	root := reflect.ValueOf(&Config{}).Elem()
	want := func(ft reflect.Type) []string {
		switch ft {
		case durationType:
			return []string{tDuration}
		case spanType:
			return []string{tSpan}
		case projectionType:
			return []string{tProject}
		case topicConfigsType:
			return []string{tConfigs}
		case reflect.TypeOf(Secret("")):
			return []string{tSecret}
		}
		switch ft.Kind() {
		case reflect.String:
			return []string{tString}
		case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
			return []string{tInt}
		case reflect.Bool:
			return []string{tBool}
		case reflect.Float64:
			return []string{tNumber}
		case reflect.Map:
			return []string{tMap}
		case reflect.Struct:
			return []string{tSection}
		case reflect.Slice:
			if ft.Elem().Kind() == reflect.Struct {
				return []string{tItems}
			}
			return []string{tList}
		}
		return nil
	}
	for _, s := range Settings {
		if s.Path == "" {
			continue
		}
		ft, ok := typeAt(root.Type(), strings.Split(s.Path, "."))
		if !ok {
			continue // TestSettingsCoverConfig names it
		}
		if w := want(ft); !slices.Contains(w, s.Type) {
			t.Errorf("%s: spec type %q, the field is a %s (%v)", s.Path, s.Type, ft, w)
		}
		if len(s.Enum) > 0 && ft.Kind() != reflect.String {
			t.Errorf("%s: allowed values on a %s", s.Path, ft)
		}
	}
}

func typeAt(t reflect.Type, segs []string) (reflect.Type, bool) {
	name, _ := strings.CutSuffix(segs[0], "[]")
	for i := 0; i < t.NumField(); i++ {
		if yamlName(t.Field(i)) != name {
			continue
		}
		ft := t.Field(i).Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if len(segs) == 1 {
			return ft, true
		}
		if ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		return typeAt(ft, segs[1:])
	}
	return nil, false
}

// The variables the config package reads are exactly the spec's (but
// the process's, which cmd/router reads: its own test checks those).
func TestSettingsEnvRead(t *testing.T) {
	read := map[string]bool{}
	getenv := func(name string) string { read[name] = true; return "" }
	OverridesFromEnv(getenv)
	APIOverridesFromEnv(getenv)
	want := map[string]bool{}
	for _, s := range Settings {
		if s.Env != "" && (s.Path != "" || s.Flag == "") {
			want[s.Env] = true
		}
	}
	for n := range read {
		if !want[n] {
			t.Errorf("the overrides read %s, which no setting of the file declares", n)
		}
	}
	for n := range want {
		if !read[n] {
			t.Errorf("Settings declares %s, which the overrides never read", n)
		}
	}
	for _, section := range []string{"security", "api", "schema_registry"} {
		for path, env := range sectionEnv(section) {
			if s, ok := SettingAt(path); !ok || s.Env != env {
				t.Errorf("sectionEnv(%s): %s -> %s, the spec %+v", section, path, env, s)
			}
		}
	}
}

// setYAML sets the value at a spec path in a YAML document. In a list
// it takes the first item that already holds the path's sections
// ("routes[].window.emit": the route with a window); outside lists it
// adds a missing section ("security.sasl").
func setYAML(n *yaml.Node, segs []string, value string, inList bool) bool {
	if n.Kind == yaml.DocumentNode {
		return setYAML(n.Content[0], segs, value, false)
	}
	name, each := strings.CutSuffix(segs[0], "[]")
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != name {
			continue
		}
		v := n.Content[i+1]
		switch {
		case len(segs) == 1:
			n.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Value: value}
			return true
		case each:
			for _, item := range v.Content {
				if setYAML(item, segs[1:], value, true) {
					return true
				}
			}
			return false
		default:
			return setYAML(v, segs[1:], value, inList)
		}
	}
	switch {
	case len(segs) == 1:
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
		return true
	case !each && !inList:
		sec := &yaml.Node{Kind: yaml.MappingNode}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, sec)
		return setYAML(sec, segs[1:], value, false)
	}
	return false
}

// Each setting with allowed values is refused, at its path, with a value
// outside them, and the problem names every value the spec allows: the
// spec's list and the checks of validation agree.
func TestSettingsEnumsRefused(t *testing.T) {
	for _, s := range Settings {
		if s.Path == "" || len(s.Enum) == 0 {
			continue
		}
		t.Run(s.Path, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(specBase), &doc); err != nil {
				t.Fatal(err)
			}
			if !setYAML(&doc, strings.Split(s.Path, "."), "not_a_value", false) {
				t.Fatalf("specBase has no place for %s", s.Path)
			}
			b, err := yaml.Marshal(&doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Load("spec.yaml", b)
			leaf := s.Path[strings.LastIndex(s.Path, ".")+1:]
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), leaf) || !strings.Contains(err.Error(), "not_a_value") {
				t.Fatalf("%s: not_a_value: Load says %v; want one problem naming %s and the value", s.Path, err, leaf)
			}
			for _, v := range s.Enum {
				if !strings.Contains(err.Error(), v) {
					t.Errorf("%s: the spec allows %q, the validator's message does not name it: %v", s.Path, v, err)
				}
			}
		})
	}
}

// docs/reference/config.md is the page ReferencePage renders from the
// spec (-update writes it).
func TestReferencePage(t *testing.T) {
	path := filepath.Join("..", "..", filepath.FromSlash(ReferencePath))
	got := ReferencePage()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/config -run TestReferencePage -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs from the settings spec at line %d (go test ./internal/config -run TestReferencePage -update rewrites it)\nspec: %s\npage: %s", ReferencePath, i+1, g, w)
			}
		}
	}
}

// Every aggregate function aggfn names (the list the window operator
// parses) is accepted by validation, and a name outside it is refused.
func TestAggregateFunctionsFromAggfn(t *testing.T) {
	for _, fn := range append(slices.Clone(aggfn.Names), "median") {
		of := ", of: v"
		if fn == aggfn.Count {
			of = ""
		}
		b := strings.Replace(specBase, "{name: n, fn: count}", "{name: n, fn: "+fn+of+"}", 1)
		_, err := Load("spec.yaml", []byte(b))
		if valid := aggfn.Valid(fn); valid != (err == nil) {
			t.Errorf("fn: %s (aggfn says valid %v): Load says %v", fn, valid, err)
		}
	}
}

// step moves a bound as YAML writes it by one unit (an integer by 1, a
// duration by 1ms).
func step(bound string, by int64) string {
	if d, err := time.ParseDuration(bound); err == nil {
		return (d + time.Duration(by)*time.Millisecond).String()
	}
	n, err := strconv.ParseInt(bound, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(bound, 64)
		if ferr != nil {
			panic(bound)
		}
		return strconv.FormatFloat(f+float64(by)/1000, 'g', -1, 64)
	}
	return itoa(n + by)
}

// withValue is specBase with the setting at path set to value.
func withValue(t *testing.T, path, value string) []byte {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(specBase), &doc); err != nil {
		t.Fatal(err)
	}
	if !setYAML(&doc, strings.Split(path, "."), value, false) {
		t.Fatalf("specBase has no place for %s", path)
	}
	b, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each bound the spec states is validation's: the bound itself loads,
// one step past it is refused at the setting's path.
func TestSettingsRangesChecked(t *testing.T) {
	for _, s := range Settings {
		for _, b := range []struct {
			bound string
			out   int64
		}{{s.Min, -1}, {s.Max, 1}} {
			if s.Path == "" || b.bound == "" {
				continue
			}
			t.Run(s.Path+" "+b.bound, func(t *testing.T) {
				if _, err := Load("spec.yaml", withValue(t, s.Path, b.bound)); err != nil {
					t.Errorf("%s: %s (the spec's bound) is refused: %v", s.Path, b.bound, err)
				}
				past := step(b.bound, b.out)
				_, err := Load("spec.yaml", withValue(t, s.Path, past))
				leaf := s.Path[strings.LastIndex(s.Path, ".")+1:]
				if err == nil || !strings.Contains(err.Error(), leaf) {
					t.Errorf("%s: %s (past the spec's bound) is not refused at it: %v", s.Path, past, err)
				}
			})
		}
	}
}
