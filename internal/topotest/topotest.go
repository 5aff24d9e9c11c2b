package topotest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
)

// got is one record read back, in the shape a diff shows.
type got struct {
	Key    *string
	Value  []byte
	Reason string
	Error  string // sidestream.error: why a dirty record is dirty
}

func (g got) String() string {
	var b strings.Builder
	if g.Key != nil {
		fmt.Fprintf(&b, "key=%q ", *g.Key)
	}
	if g.Reason != "" {
		fmt.Fprintf(&b, "reason=%s ", g.Reason)
	}
	if g.Error != "" {
		fmt.Fprintf(&b, "error=%q ", g.Error)
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

// Options are what one run of Run takes besides its files.
type Options struct {
	// Run, when set, runs only the cases whose name matches this
	// regular expression (plain text matches the names containing it).
	Run string
	// Timeout is the most time one case may take (default 2 minutes).
	Timeout time.Duration
	// Verbose also prints, under each passing case, what each route
	// received.
	Verbose bool
	// Parallel is how many cases run at once, each on its own
	// in-process cluster (default GOMAXPROCS, at least 4); the report
	// keeps the files' order.
	Parallel int
	// Format is text (a line per case, the diff under a failing one;
	// the default) or json (one object: ok, and each case's file, name,
	// verdict, duration, error or diff, and what each route received).
	Format string
}

// Run runs the topology test files (each of files may be a glob that
// must match at least one file) and writes one line per case to stdout,
// the diff under a failing one, and the count of failed cases to
// stderr. failed is true when a case failed; err is a problem with the
// files or options themselves (no case ran).
func Run(ctx context.Context, files []string, opts Options, stdout, stderr io.Writer) (failed bool, err error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Format != "" && opts.Format != "text" && opts.Format != "json" {
		return false, fmt.Errorf("format %q: use text or json", opts.Format)
	}
	only, err := filter(opts.Run)
	if err != nil {
		return false, err
	}
	tfs, err := readFiles(files)
	if err != nil {
		return false, err
	}
	// Each case's router stops in the background once its routes are
	// read; Run returns after all have.
	var stopping sync.WaitGroup
	defer stopping.Wait()
	var jobs []job
	for _, tf := range tfs {
		for _, tc := range tf.Tests {
			if only == nil || only.MatchString(tc.Name) {
				jobs = append(jobs, job{tf: tf, tc: tc, done: make(chan struct{})})
			}
		}
	}
	if len(jobs) == 0 {
		return false, errors.New("no test case to run")
	}
	results := runJobs(ctx, jobs, opts, &stopping, func(r CaseResult) {
		if opts.Format != "json" {
			r.writeText(stdout, opts.Verbose)
		}
	})
	nfailed := 0
	for _, r := range results {
		if !r.OK {
			nfailed++
		}
	}
	if opts.Format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			OK    bool         `json:"ok"`
			Cases []CaseResult `json:"cases"`
		}{nfailed == 0, results}); err != nil {
			return false, err
		}
	}
	if nfailed > 0 {
		fmt.Fprintf(stderr, "router test: %d of %d cases failed\n", nfailed, len(results))
		return true, nil
	}
	return false, nil
}

// job is one case to run, and its result once done is closed.
type job struct {
	tf   *File
	tc   Case
	res  CaseResult
	done chan struct{}
}

// runJobs runs the cases, up to opts.Parallel at once, each on its own
// cluster, and hands each result to report in the files' order as soon
// as it and every case before it are done.
func runJobs(ctx context.Context, jobs []job, opts Options, stopping *sync.WaitGroup, report func(CaseResult)) []CaseResult {
	n := opts.Parallel
	if n <= 0 {
		// A case mostly waits (commit intervals, the router's polls):
		// four at once pay on two cores too.
		n = max(goruntime.GOMAXPROCS(0), 4)
	}
	slots := make(chan struct{}, n)
	go func() {
		for i := range jobs {
			slots <- struct{}{}
			go func(j *job) {
				defer func() { <-slots }()
				j.res = runOne(ctx, j.tf, j.tc, opts, stopping)
				close(j.done)
			}(&jobs[i])
		}
	}()
	out := make([]CaseResult, len(jobs))
	for i := range jobs {
		<-jobs[i].done
		out[i] = jobs[i].res
		report(out[i])
	}
	return out
}

// filter is the --run expression, nil without one.
func filter(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("--run %q: %v", expr, err)
	}
	return re, nil
}

// readFiles expands the globs and reads every test file, before any
// case runs.
func readFiles(files []string) ([]*File, error) {
	if len(files) == 0 {
		return nil, errors.New("name the test files (router test examples/*.test.yaml)")
	}
	var tfs []*File
	for _, p := range files {
		m, err := filepath.Glob(p)
		if err != nil || len(m) == 0 {
			return nil, fmt.Errorf("no file matches %q", p)
		}
		for _, f := range m {
			tf, err := ReadFile(f)
			if err != nil {
				return nil, err
			}
			tfs = append(tfs, tf)
		}
	}
	return tfs, nil
}

// CaseResult is one case's verdict, as --format json prints it.
type CaseResult struct {
	File       string `json:"file"`
	Name       string `json:"name"`
	OK         bool   `json:"ok"`
	DurationMs int64  `json:"duration_ms"`
	// Error: the case could not run (a bad input, a timeout); Diff: it
	// ran and a route did not receive what it wanted.
	Error    string `json:"error,omitempty"`
	Diff     string `json:"diff,omitempty"`
	Received string `json:"received,omitempty"`
	took     time.Duration
}

// runOne runs one case.
func runOne(ctx context.Context, tf *File, tc Case, opts Options, stopping *sync.WaitGroup) CaseResult {
	start := time.Now()
	res, err := runCase(ctx, tf, tc, opts.Timeout, stopping)
	r := CaseResult{File: tf.path, Name: tc.Name, Diff: res.diff, Received: res.received}
	r.took = time.Since(start).Round(time.Millisecond)
	r.DurationMs = r.took.Milliseconds()
	if err != nil {
		r.Error = err.Error()
	}
	r.OK = err == nil && res.diff == ""
	return r
}

// writeText writes a case's line, and its error or diff when it failed
// (what each route received too when verbose).
func (r CaseResult) writeText(w io.Writer, verbose bool) {
	switch {
	case r.Error != "":
		fmt.Fprintf(w, "FAIL %s: %s (%s)\n    %s\n", r.File, r.Name, r.took, strings.ReplaceAll(r.Error, "\n", "\n    "))
	case r.Diff != "":
		fmt.Fprintf(w, "FAIL %s: %s (%s)\n%s", r.File, r.Name, r.took, r.Diff)
	default:
		fmt.Fprintf(w, "ok   %s: %s (%s)\n", r.File, r.Name, r.took)
	}
	if verbose && r.Error == "" {
		fmt.Fprint(w, r.Received)
	}
}

// caseResult is a case's diff ("" when every route matches) and what
// every route received.
type caseResult struct {
	diff, received string
}

// runCase runs one case on a fresh in-process Kafka (kfake) through the
// real processor, step by step on virtual time, then compares what each
// route received.
func runCase(ctx context.Context, tf *File, tc Case, timeout time.Duration, stopping *sync.WaitGroup) (caseResult, error) {
	topoPath := tf.topologyPath()
	cfg, err := config.LoadFile(topoPath)
	if err != nil {
		return caseResult{}, err
	}
	if n := cmpOr(tc.Partitions, tf.Partitions); n > 0 {
		cfg.Topics.Partitions = n
	}
	seeds := inputTopics(cfg)
	for _, t := range cfg.Tables {
		seeds = append(seeds, t.Topic)
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(cfg.Topics.Partitions, seeds...))
	if err != nil {
		return caseResult{}, fmt.Errorf("start the in-process Kafka: %w", err)
	}
	closeAll := []func(){cluster.Close}
	cleanup := func() {
		for i := len(closeAll) - 1; i >= 0; i-- {
			closeAll[i]()
		}
	}
	brokers := cluster.ListenAddrs()
	o := config.Overrides{Brokers: brokers}
	reg, err := startTestRegistry(filepath.Dir(tf.path), cfg, tf.Schemas)
	if err != nil {
		cleanup()
		return caseResult{}, tf.errAt("schemas", "%v", err)
	}
	if reg != nil {
		closeAll = append(closeAll, reg.Close)
		o.Registry = config.RegistryOverrides{URL: reg.URL()}
	}
	top, err := compileTopology(cfg, topoPath, o)
	if err != nil {
		cleanup()
		return caseResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	if err := writeTables(ctx, brokers, top, tf.Tables, tc.Tables); err != nil {
		cancel()
		cleanup()
		return caseResult{}, err
	}
	h, err := prepare(tf, tc, top, brokers, reg)
	if err != nil {
		cancel()
		cleanup()
		return caseResult{}, err
	}
	res, err := h.run(ctx, timeout)
	stopping.Add(1)
	go func() {
		defer stopping.Done()
		defer cancel()
		_ = h.stop() // the case is decided; a stop error changes nothing of it
		cleanup()
	}()
	return res, err
}

func cmpOr(a, b int32) int32 {
	if a != 0 {
		return a
	}
	return b
}

// inputTopics are the topics of a topology's inputs, created with the
// cluster.
func inputTopics(cfg *config.Config) []string {
	out := make([]string, 0, len(cfg.Inputs))
	for _, in := range cfg.Inputs {
		out = append(out, in.Topic)
	}
	return out
}

// compileTopology compiles a loaded topology as router run would, on
// the in-process Kafka: plaintext, the overrides (brokers, the
// in-process registry) applied.
func compileTopology(cfg *config.Config, path string, o config.Overrides) (*plan.Plan, error) {
	cfg.Security = config.Security{Protocol: config.ProtocolPlaintext}
	o.Security = config.SecurityOverrides{}
	if o.Registry.URL != "" {
		// The in-process registry: no auth, no TLS.
		cfg.SchemaRegistry = config.SchemaRegistry{}
	}
	if err := cfg.Apply(o); err != nil {
		return nil, err
	}
	return plan.Compile(cfg, filepath.Dir(path))
}

// inputConsumed is the committed count of input records (the consumed
// counters move only with a commit).
func inputConsumed(top *plan.Plan, m *metrics.Metrics) float64 {
	var n float64
	for _, t := range top.InputTopics() {
		n += testutil.ToFloat64(m.Consumed.WithLabelValues(t))
	}
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
