package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/runtime"
	"github.com/sidestream/sidestream/internal/sideroute"
	"github.com/sidestream/sidestream/internal/wire"
)

// topologyTests is a test file of `router test`: a topology and cases of
// input records with the records each route must receive.
type topologyTests struct {
	Topology string `yaml:"topology"` // relative to the test file
	// Schemas names the writer schema of each registry-backed input (input
	// topic: schema file, relative to the test file), registered under
	// <topic>-value in the in-process registry a case runs with.
	Schemas map[string]string `yaml:"schemas"`
	Tests   []testCase        `yaml:"tests"`
}

type testCase struct {
	Name  string      `yaml:"name"`
	Input []testInput `yaml:"input"`
	// Expect maps a route name (as router tail names it: a route, dirty,
	// WINDOW.late, ASSEMBLY.incomplete ...) to its records: a list is the
	// exact set (in any order); {contains: [...]} needs those among
	// others. A route not named must receive nothing.
	Expect map[string]yaml.Node `yaml:"expect"`
	// Wait keeps the router running this long after every input record
	// is processed, for processing-time TTLs and idle watermarks.
	Wait string `yaml:"wait"`
}

type testInput struct {
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
	Timestamp   int64             `yaml:"timestamp"` // epoch ms; default now
}

// expected is one expected record; a field left out is not compared.
type expected struct {
	Key    *string   `yaml:"key"`
	Value  yaml.Node `yaml:"value"`
	Reason string    `yaml:"reason"` // sidestream.reason of dirty, late ... records
	// ValueHas is a JSON object the value must contain: its fields equal,
	// nested objects contained the same way, other fields free (a window
	// result's revision, which depends on how commits cut the input).
	ValueHas map[string]any `yaml:"value_has"`
}

// got is one record read back, in the shape a diff shows.
type got struct {
	Key    *string
	Value  []byte
	Reason string
}

func (g got) String() string {
	var b strings.Builder
	if g.Key != nil {
		fmt.Fprintf(&b, "key=%q ", *g.Key)
	}
	if g.Reason != "" {
		fmt.Fprintf(&b, "reason=%s ", g.Reason)
	}
	if g.Value == nil {
		b.WriteString("value=null")
	} else if json.Valid(g.Value) {
		var c bytes.Buffer
		_ = json.Compact(&c, g.Value)
		b.WriteString("value=" + c.String())
	} else {
		fmt.Fprintf(&b, "value=%q", g.Value)
	}
	return b.String()
}

func cmdTest(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: router test [--run REGEXP] FILE... (topology test files; globs allowed)")
		fs.PrintDefaults()
	}
	only := fs.String("run", "", "run only the cases whose name contains this text")
	timeout := fs.Duration("timeout", 2*time.Minute, "most time one case may take")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return exitError{code: 2, msg: "router test: name the test files (router test examples/*.test.yaml)"}
	}
	var files []string
	for _, p := range fs.Args() {
		m, err := filepath.Glob(p)
		if err != nil || len(m) == 0 {
			return exitError{code: 2, msg: fmt.Sprintf("router test: no file matches %q", p)}
		}
		files = append(files, m...)
	}
	failed, ran := 0, 0
	for _, f := range files {
		tf, err := readTestFile(f)
		if err != nil {
			return exitError{code: 2, msg: "router test: " + err.Error()}
		}
		for _, tc := range tf.Tests {
			if *only != "" && !strings.Contains(tc.Name, *only) {
				continue
			}
			ran++
			start := time.Now()
			diff, err := runCase(f, tf, tc, *timeout)
			switch {
			case err != nil:
				failed++
				fmt.Fprintf(stdout, "FAIL %s: %s (%s)\n    %v\n", f, tc.Name, time.Since(start).Round(time.Millisecond), err)
			case diff != "":
				failed++
				fmt.Fprintf(stdout, "FAIL %s: %s (%s)\n%s", f, tc.Name, time.Since(start).Round(time.Millisecond), diff)
			default:
				fmt.Fprintf(stdout, "ok   %s: %s (%s)\n", f, tc.Name, time.Since(start).Round(time.Millisecond))
			}
		}
	}
	if ran == 0 {
		return exitError{code: 2, msg: "router test: no test case to run"}
	}
	if failed > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("router test: %d of %d cases failed", failed, ran)}
	}
	return nil
}

func readTestFile(path string) (*topologyTests, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tf topologyTests
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&tf); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if tf.Topology == "" || len(tf.Tests) == 0 {
		return nil, fmt.Errorf("%s: a test file needs topology: FILE and at least one test", path)
	}
	for i, tc := range tf.Tests {
		if tc.Name == "" || len(tc.Input) == 0 {
			return nil, fmt.Errorf("%s: tests[%d] needs a name and input records", path, i)
		}
	}
	return &tf, nil
}

// runCase runs one case on a fresh in-process Kafka (kfake) through the
// real processor, then compares what each route received. It returns the
// diff, "" when every route matches.
func runCase(file string, tf *topologyTests, tc testCase, timeout time.Duration) (string, error) {
	dir := filepath.Dir(file)
	topoPath := tf.Topology
	if !filepath.IsAbs(topoPath) {
		topoPath = filepath.Join(dir, topoPath)
	}
	cfg, err := config.LoadFile(topoPath)
	if err != nil {
		var ce *config.ConfigError
		if errors.As(err, &ce) {
			return "", errors.New(ce.Error())
		}
		return "", err
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(cfg.Topics.Partitions, inputTopics(cfg)...))
	if err != nil {
		return "", fmt.Errorf("start the in-process Kafka: %w", err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	o := config.Overrides{Brokers: brokers}
	reg, err := startTestRegistry(dir, cfg, tf.Schemas)
	if err != nil {
		return "", err
	}
	if reg != nil {
		defer reg.Close()
		o.Registry = config.RegistryOverrides{URL: reg.URL()}
	}
	top, err := loadTopology(topoPath, o, true)
	if err != nil {
		return "", err
	}
	expect, err := parseExpect(top, tc.Expect)
	if err != nil {
		return "", err
	}
	recs, err := inputRecords(dir, top, tc.Input, reg)
	if err != nil {
		return "", err
	}
	wait := time.Duration(0)
	if tc.Wait != "" {
		if wait, err = time.ParseDuration(tc.Wait); err != nil {
			return "", fmt.Errorf("wait: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := writeInputs(ctx, brokers, recs, tc.Input); err != nil {
		return "", err
	}
	if err := runUntilProcessed(ctx, top, len(recs), wait, timeout); err != nil {
		return "", err
	}
	return compareRoutes(ctx, brokers, top, expect, reg)
}

// writeInputs writes a case's records one by one, in the file's order:
// each lands after the one before (in a given partition when it says so).
func writeInputs(ctx context.Context, brokers []string, recs []*kgo.Record, in []testInput) error {
	byKey, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer byKey.Close()
	manual, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer manual.Close()
	for i, r := range recs {
		cl := byKey
		if in[i].Partition != nil {
			cl, r.Partition = manual, *in[i].Partition
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("write input[%d]: %w", i, err)
		}
	}
	return nil
}

// runUntilProcessed runs the processor until the n input records are
// processed (then wait longer, for processing-time TTLs), and stops it,
// which commits the last transaction.
func runUntilProcessed(ctx context.Context, top *plan.Plan, n int, wait, timeout time.Duration) error {
	m := metrics.New()
	p, err := runtime.New(top, runtime.WithMetrics(m), runtime.WithInstanceID("test"),
		runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	for !processed(top, m, int64(n)) {
		select {
		case err := <-done:
			stop()
			return fmt.Errorf("the router stopped: %v", err)
		case <-ctx.Done():
			stop()
			runErr := <-done
			ok, why := p.Ready()
			return fmt.Errorf("timed out after %s: %v of %d input records processed (ready %v: %s; run: %v)", timeout, inputConsumed(top, m), n, ok, why, runErr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	stop() // ends the open transaction: the last results are committed
	if err := <-done; err != nil {
		return fmt.Errorf("the router: %w", err)
	}
	return nil
}

// processed: every input record consumed and committed, and every record
// repartitioned for a window or an assembly through stage two.
func processed(top *plan.Plan, m *metrics.Metrics, n int64) bool {
	if int64(inputConsumed(top, m)) < n {
		return false
	}
	for _, r := range top.Routes {
		rep := ""
		switch {
		case r.Window != nil && !r.Window.Direct:
			rep = r.Window.RepartitionTopic
		case r.Assembly != nil && !r.Assembly.Direct:
			rep = r.Assembly.RepartitionTopic
		}
		if rep != "" && testutil.ToFloat64(m.Consumed.WithLabelValues(rep)) < testutil.ToFloat64(m.RouteWritten.WithLabelValues(r.Name)) {
			return false
		}
	}
	return true
}

func inputRecords(dir string, top *plan.Plan, in []testInput, reg *testRegistry) ([]*kgo.Record, error) {
	inputs := top.InputTopics()
	var out []*kgo.Record
	for i, x := range in {
		r := &kgo.Record{Topic: x.Topic}
		if r.Topic == "" {
			r.Topic = inputs[0]
		}
		if !contains(inputs, r.Topic) {
			return nil, fmt.Errorf("input[%d]: topic %q is not an input of the topology (%s)", i, r.Topic, strings.Join(inputs, ", "))
		}
		if x.Key != nil {
			r.Key = []byte(*x.Key)
		}
		v, err := inputValue(dir, r.Topic, x, reg)
		if err != nil {
			return nil, fmt.Errorf("input[%d]: %w", i, err)
		}
		r.Value = v
		for k, v := range x.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
		sort.Slice(r.Headers, func(a, b int) bool { return r.Headers[a].Key < r.Headers[b].Key })
		if x.Timestamp > 0 {
			r.Timestamp = time.UnixMilli(x.Timestamp)
		}
		out = append(out, r)
	}
	return out, nil
}

// inputValue is one input record's value: raw bytes (value_file,
// value_base64, a string value), or a JSON value, framed with the
// input's schema when the input is registry-backed.
func inputValue(dir, topic string, x testInput, reg *testRegistry) ([]byte, error) {
	n := 0
	for _, set := range []bool{x.Value.Kind != 0, x.ValueFile != "", x.ValueBase64 != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return nil, errors.New("give one of value, value_file and value_base64")
	case x.SchemaID != 0 && (x.Value.Kind != yaml.MappingNode || reg == nil || reg.inputs[topic] == nil):
		return nil, fmt.Errorf("schema_id frames a JSON object value written to a registry-backed input (%s is not one, or the value is raw)", topic)
	case x.ValueFile != "":
		return os.ReadFile(filepath.Join(dir, x.ValueFile))
	case x.ValueBase64 != "":
		b, err := base64.StdEncoding.DecodeString(x.ValueBase64)
		if err != nil {
			return nil, fmt.Errorf("value_base64: %v", err)
		}
		return b, nil
	case x.Value.Kind == 0:
		return nil, nil
	}
	b, err := nodeBytes(&x.Value)
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	if x.Value.Kind == yaml.ScalarNode && (x.Value.ShortTag() == "!!str" || x.Value.ShortTag() == "!!null") {
		return b, nil // raw: as it is, also to a registry-backed input
	}
	framed, ok, err := reg.encode(topic, b, x.SchemaID)
	switch {
	case err != nil:
		return nil, fmt.Errorf("value (line %d): %w", x.Value.Line, err)
	case ok:
		return framed, nil
	}
	return b, nil
}

// nodeBytes is a YAML value as record bytes: a string as it is, null as a
// null value, anything else as JSON.
func nodeBytes(n *yaml.Node) ([]byte, error) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return []byte(n.Value), nil
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

type routeExpect struct {
	target   sideroute.Target
	records  []expected
	contains bool
}

func parseExpect(top *plan.Plan, exp map[string]yaml.Node) (map[string]*routeExpect, error) {
	out := map[string]*routeExpect{}
	for _, t := range sideroute.Targets(top) {
		out[t.Name] = &routeExpect{target: t}
	}
	for name, n := range exp {
		re, ok := out[name]
		if !ok {
			t, err := sideroute.Resolve(top, name)
			if err != nil {
				return nil, fmt.Errorf("expect: %v", err)
			}
			re = out[t.Name]
		}
		n := n
		if n.Kind == yaml.MappingNode {
			var c struct {
				Contains []expected `yaml:"contains"`
			}
			if err := n.Decode(&c); err != nil {
				return nil, fmt.Errorf("expect %s: %v", name, err)
			}
			re.records, re.contains = c.Contains, true
			continue
		}
		if err := n.Decode(&re.records); err != nil {
			return nil, fmt.Errorf("expect %s: a list of records or {contains: [...]}: %v", name, err)
		}
	}
	return out, nil
}

// compareRoutes reads every route's topic back (read_committed) and
// returns the differences, route by route.
func compareRoutes(ctx context.Context, brokers []string, top *plan.Plan, exp map[string]*routeExpect, reg *testRegistry) (string, error) {
	names := make([]string, 0, len(exp))
	for n := range exp {
		names = append(names, n)
	}
	sort.Strings(names)
	var diff strings.Builder
	for _, name := range names {
		re := exp[name]
		recs, err := readback.ReadCommitted(ctx, brokers, re.target.Topic)
		if err != nil && !strings.Contains(err.Error(), "UNKNOWN_TOPIC") {
			return "", fmt.Errorf("read %s (%s): %w", name, re.target.Topic, err)
		}
		var gots []got
		for _, r := range recs {
			g := got{Value: reg.view(ctx, r.Value), Reason: wire.Decode(r.Headers).Code()}
			if r.Key != nil {
				k := string(r.Key)
				g.Key = &k
			}
			gots = append(gots, g)
		}
		missing, extra := match(re.records, gots)
		if re.contains {
			extra = nil
		}
		if len(missing) == 0 && len(extra) == 0 {
			continue
		}
		fmt.Fprintf(&diff, "    route %s (%s): %d records\n", name, re.target.Topic, len(gots))
		for _, m := range missing {
			fmt.Fprintf(&diff, "      - want %s\n", describeExpected(m))
		}
		for _, g := range extra {
			fmt.Fprintf(&diff, "      + got  %s\n", g)
		}
	}
	return diff.String(), nil
}

// match pairs each expected record with one record read (any order): the
// expected ones left over are missing, the records left over are extra.
func match(want []expected, have []got) (missing []expected, extra []got) {
	used := make([]bool, len(have))
	for _, w := range want {
		found := false
		for i, g := range have {
			if !used[i] && matches(w, g) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			missing = append(missing, w)
		}
	}
	for i, g := range have {
		if !used[i] {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

func matches(w expected, g got) bool {
	if w.Key != nil && (g.Key == nil || *w.Key != *g.Key) {
		return false
	}
	if w.Reason != "" && w.Reason != g.Reason {
		return false
	}
	if w.ValueHas != nil {
		var gv any
		if json.Unmarshal(g.Value, &gv) != nil || !containsJSON(gv, normalize(w.ValueHas)) {
			return false
		}
	}
	if w.Value.Kind == 0 {
		return true
	}
	if w.Value.Kind == yaml.ScalarNode && w.Value.ShortTag() == "!!null" {
		return g.Value == nil
	}
	if w.Value.Kind == yaml.ScalarNode && w.Value.ShortTag() == "!!str" {
		return string(g.Value) == w.Value.Value
	}
	var wv, gv any
	if err := w.Value.Decode(&wv); err != nil {
		return false
	}
	if json.Unmarshal(g.Value, &gv) != nil {
		return false
	}
	wb, _ := json.Marshal(normalize(wv))
	gb, _ := json.Marshal(gv)
	return bytes.Equal(wb, gb)
}

// normalize turns YAML's decoded maps into the JSON shapes json.Unmarshal
// makes, so the two compare as JSON.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// containsJSON: every field of want is in have with an equal value,
// objects compared the same way.
func containsJSON(have, want any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		hb, _ := json.Marshal(have)
		wb, _ := json.Marshal(want)
		return bytes.Equal(hb, wb)
	}
	hm, ok := have.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range wm {
		hv, ok := hm[k]
		if !ok || !containsJSON(hv, wv) {
			return false
		}
	}
	return true
}

func describeExpected(e expected) string {
	var b strings.Builder
	if e.Key != nil {
		fmt.Fprintf(&b, "key=%q ", *e.Key)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, "reason=%s ", e.Reason)
	}
	if e.Value.Kind != 0 {
		if v, err := nodeBytes(&e.Value); err == nil {
			fmt.Fprintf(&b, "value=%s ", v)
		}
	}
	if e.ValueHas != nil {
		v, _ := json.Marshal(normalize(e.ValueHas))
		fmt.Fprintf(&b, "value_has=%s", v)
	}
	return strings.TrimSpace(b.String())
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
