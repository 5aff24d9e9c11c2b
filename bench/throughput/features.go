package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/runtime"
	"github.com/sidestream/sidestream/internal/serve"
)

// The features whose cost on W1 the feature contenders measure: each is
// sidestream-w1-eos with one feature on.
const (
	featLookup = "lookup" // one lookup() per record against a 100,000-row table
	featTopic  = "topic"  // the main route's topic computed per record, over 4 topics
	featFour   = "four"   // no feature: main's records over featTopic's 4 topics by 4 fixed routes (its Kafka side)
	featReload = "reload" // a live reload (SIGHUP) at the start of the window and every --reload-every
	featTrace  = "trace"  // spans at a 1% sample, exported over OTLP/HTTP to the harness
)

// featureContenders run only when --contenders names them: the default
// table stays the comparison with the limit and the peers.
var featureContenders = []contender{
	{Name: "sidestream-w1-eos-lookup", Engine: "sidestream", Workload: "w1-lookup", Guarantee: "eos", Feature: featLookup},
	{Name: "sidestream-w1-eos-topic", Engine: "sidestream", Workload: "w1-topic", Guarantee: "eos", Feature: featTopic},
	{Name: "sidestream-w1-eos-four", Engine: "sidestream", Workload: "w1-four", Guarantee: "eos", Feature: featFour},
	{Name: "sidestream-w1-eos-reload", Engine: "sidestream", Workload: "w1", Guarantee: "eos", Feature: featReload},
	{Name: "sidestream-w1-eos-trace", Engine: "sidestream", Workload: "w1-trace", Guarantee: "eos", Feature: featTrace},
}

// reloadAltFile is the topology the reload contender alternates with
// w1.yaml: the same routing, its predicates written the other way round.
const reloadAltFile = "w1-reload.yaml"

// tableRows and tableBase: the lookup contender's table holds the users
// tableBase ... tableBase+tableRows-1; the generator's user_id is 1000 ...
// 90999, so about 90% of the lookups hit.
const (
	tableRows = 100_000
	tableBase = 10_000
	tableName = "users"
)

// computedTopics are the topic contender's outputs beside PREFIX.main|...:
// PREFIX.main.0 ... PREFIX.main.3 (bench/topologies/w1-topic.yaml); the
// four contender writes them by fixed routes (w1-four.yaml).
var computedTopics = []string{"main.0", "main.1", "main.2", "main.3"}

// featureOpts are the contender flags of the features.
type featureOpts struct {
	listen, tableTopic, otlp, reloadAlt string
}

// serveMetrics serves m on addr at /metrics, on a mux of its own.
func serveMetrics(addr string, m *metrics.Metrics) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

// startReloads reloads the running topology on every signal of hup, as
// `router run` does on SIGHUP (serve.Reloader: the same checks, the same
// sidestream_reloads_total counter), loading the alternate file on odd
// reloads and the workload's own on even ones.
func startReloads(ctx context.Context, top *plan.Plan, p *runtime.Processor, m *metrics.Metrics, log *slog.Logger, hup <-chan os.Signal, load func(alt bool) (*plan.Plan, error)) {
	n := 0
	rl := serve.NewReloader(top, func() (*plan.Plan, error) {
		n++
		return load(n%2 == 1)
	}, p, m, log)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if o := rl.Reload(ctx); o.Outcome != metrics.ReloadApplied {
					log.Warn("reload not applied", "outcome", o.Outcome, "err", o.Error, "refused", o.Refused)
				}
			}
		}
	}()
}

// featureStats is what a feature contender's run did with its feature,
// from its metrics and the broker (run.Feature).
type featureStats struct {
	// ReloadsSent: SIGHUPs the harness sent; Reloads: the contender's
	// sidestream_reloads_total{outcome="applied"}; ReloadsNotApplied the
	// other outcomes (must be 0).
	ReloadsSent       int `json:"reloads_sent,omitempty"`
	Reloads           int `json:"reloads,omitempty"`
	ReloadsNotApplied int `json:"reloads_not_applied,omitempty"`
	// TableRows: sidestream_table_rows; LookupsHit, LookupsMiss:
	// sidestream_table_lookups_total by result.
	TableRows   int `json:"table_rows,omitempty"`
	LookupsHit  int `json:"lookups_hit,omitempty"`
	LookupsMiss int `json:"lookups_miss,omitempty"`
	// ComputedTopicOffsets: the end offsets of each computed topic
	// (records and transaction markers).
	ComputedTopicOffsets map[string]int64 `json:"computed_topic_offsets,omitempty"`
	// Spans the OTLP endpoint received (after the contender stopped and
	// flushed), in OTLPRequests export requests.
	Spans        int `json:"spans,omitempty"`
	OTLPRequests int `json:"otlp_requests,omitempty"`
}

// note is the stats as the harness's log line shows them ("" for none).
func (st *featureStats) note() string {
	if st == nil {
		return ""
	}
	b, _ := json.Marshal(st)
	return "; feature " + string(b)
}

// extraOutputs are the topics a contender writes beyond outputSuffixes,
// each carrying input values: the harness creates them, counts them and
// reads them back.
func (c contender) extraOutputs(prefix string) []string {
	if c.Feature == featTopic || c.Feature == featFour {
		return outputs(prefix, computedTopics)
	}
	return nil
}

// featureRun is one run's feature side: the contender's flags, its
// metrics address, the OTLP endpoint and the reload driver.
type featureRun struct {
	c       contender
	args    []string
	metrics string // host:port of the contender's /metrics; "" for a default contender
	sink    *otlpSink
	every   time.Duration

	stopDriver func()
	sent       atomic.Int64
}

// newFeatureRun prepares a run of c: a default contender gets nothing
// (no flags, no endpoint: it runs exactly as before).
func newFeatureRun(c contender, env compareEnv) (*featureRun, error) {
	fr := &featureRun{c: c, every: env.reloadEvery, stopDriver: func() {}}
	if c.Feature == "" {
		return fr, nil
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	fr.metrics = "127.0.0.1:" + strconv.Itoa(port)
	fr.args = append(fr.args, "--listen", fr.metrics)
	switch c.Feature {
	case featLookup:
		if env.tableTopic == "" {
			return nil, errors.New("no table topic (the harness fills one when a lookup contender is in the session)")
		}
		fr.args = append(fr.args, "--table-topic", env.tableTopic)
	case featReload:
		fr.args = append(fr.args, "--reload-alt", reloadAltFile)
	case featTrace:
		if fr.sink, err = startOTLPSink(); err != nil {
			return nil, err
		}
		fr.args = append(fr.args, "--otlp", fr.sink.url())
	}
	return fr, nil
}

// begin starts the reload driver once the contender processes records: a
// SIGHUP now, then every fr.every until stopped.
func (fr *featureRun) begin(p *proc) {
	if fr.c.Feature != featReload {
		return
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(fr.every)
		defer t.Stop()
		for {
			if p.cmd.Process.Signal(syscall.SIGHUP) == nil {
				fr.sent.Add(1)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	fr.stopDriver = func() { once.Do(func() { close(done); <-stopped }) }
}

// close ends what the run started beside the contender.
func (fr *featureRun) close() {
	fr.stopDriver()
	if fr.sink != nil {
		fr.sink.close()
	}
}

// check gathers and checks what the contender did with its feature, after
// the measured window: the reloads all applied, the lookups made (about
// one per record, most hits) against a loaded table, every computed topic
// written, spans exported. Tracing is checked after the contender
// stopped (its tracer flushes at shutdown); check stops it.
func (fr *featureRun) check(ctx context.Context, adm *kadm.Client, p *proc, prefix string, n int, ceiling time.Duration) (*featureStats, error) {
	if fr.c.Feature == "" {
		return nil, nil
	}
	fr.stopDriver()
	st := &featureStats{}
	switch fr.c.Feature {
	case featReload:
		st.ReloadsSent = int(fr.sent.Load())
		if st.ReloadsSent == 0 {
			return st, errors.New("no reload was sent")
		}
		// The last reload applies at the next commit interval.
		var text string
		err := waitUntil(ctx, ceiling, 50*time.Millisecond, fmt.Sprintf("%d reloads applied", st.ReloadsSent), func() (bool, string) {
			var err error
			if text, err = scrape(ctx, fr.metrics); err != nil {
				return false, err.Error()
			}
			st.Reloads = int(metricValue(text, metrics.NameReloads, `outcome="applied"`))
			st.ReloadsNotApplied = 0
			for _, o := range []string{metrics.ReloadUnchanged, metrics.ReloadRefused, metrics.ReloadInvalid, metrics.ReloadFailed} {
				st.ReloadsNotApplied += int(metricValue(text, metrics.NameReloads, `outcome="`+o+`"`))
			}
			return st.Reloads+st.ReloadsNotApplied >= st.ReloadsSent, fmt.Sprintf("%d applied, %d not", st.Reloads, st.ReloadsNotApplied)
		})
		if err != nil {
			return st, err
		}
		if st.ReloadsNotApplied > 0 {
			return st, fmt.Errorf("%d of %d reloads not applied (sidestream_reloads_total)", st.ReloadsNotApplied, st.ReloadsSent)
		}
	case featLookup:
		text, err := scrape(ctx, fr.metrics)
		if err != nil {
			return st, err
		}
		tl := `table="` + tableName + `"`
		st.TableRows = int(metricValue(text, metrics.NameTableRows, tl))
		st.LookupsHit = int(metricValue(text, metrics.NameTableLookups, tl, `result="hit"`))
		st.LookupsMiss = int(metricValue(text, metrics.NameTableLookups, tl, `result="miss"`))
		// Every record that parses does one lookup: all but the
		// generator's few malformed ones (1%).
		if st.TableRows != tableRows || st.LookupsHit+st.LookupsMiss < n*9/10 || st.LookupsHit < 2*st.LookupsMiss {
			return st, fmt.Errorf("table %d rows (want %d), %d hits and %d misses for %d records", st.TableRows, tableRows, st.LookupsHit, st.LookupsMiss, n)
		}
	case featTopic, featFour:
		ts := fr.c.extraOutputs(prefix)
		end, err := adm.ListEndOffsets(ctx, ts...)
		if err != nil {
			return st, err
		}
		st.ComputedTopicOffsets = map[string]int64{}
		end.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				st.ComputedTopicOffsets[strings.TrimPrefix(o.Topic, prefix+".")] += o.Offset
			}
		})
		for _, t := range computedTopics {
			if st.ComputedTopicOffsets[t] == 0 {
				return st, fmt.Errorf("computed topic %s.%s is empty (%v)", prefix, t, st.ComputedTopicOffsets)
			}
		}
	case featTrace:
		_ = p.stop()
		st.Spans, st.OTLPRequests = int(fr.sink.spans.Load()), int(fr.sink.requests.Load())
		if st.Spans == 0 {
			return st, fmt.Errorf("no span reached the OTLP endpoint (%d requests)", st.OTLPRequests)
		}
	}
	return st, nil
}

// freePort is a loopback port free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// scrape reads a contender's /metrics.
func scrape(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("metrics of the contender: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// metricValue is the sum of the series of name (in Prometheus' text
// format) whose labels include every one of labels (`k="v"`); 0 if none.
func metricValue(text, name string, labels ...string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		i := strings.LastIndexByte(rest, ' ')
		if i < 0 {
			continue
		}
		series := rest[:i]
		match := true
		for _, l := range labels {
			if !strings.Contains(series, l) {
				match = false
				break
			}
		}
		if v, err := strconv.ParseFloat(rest[i+1:], 64); err == nil && match {
			sum += v
		}
	}
	return sum
}

// otlpSink is an OTLP/HTTP traces endpoint on 127.0.0.1 that decodes each
// export request, counts its spans and drops them: a real destination for
// the exporter (its encoding and HTTP round trips are in the contender's
// cost), at little cost to the harness.
type otlpSink struct {
	ln       net.Listener
	srv      *http.Server
	spans    atomic.Int64
	requests atomic.Int64
}

func startOTLPSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", s.export)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *otlpSink) url() string { return "http://" + s.ln.Addr().String() + "/v1/traces" }

func (s *otlpSink) close() { _ = s.srv.Close() }

func (s *otlpSink) export(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			s.spans.Add(int64(len(ss.GetSpans())))
		}
	}
	s.requests.Add(1)
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// fillTable creates a compacted 6-partition topic and writes rows
// {"user_id":K,"tier":...,"region":...} keyed K = base ... base+rows-1
// (the Kafka key: the table's key), returning their value bytes.
func fillTable(ctx context.Context, adm *kadm.Client, cl *kgo.Client, topic string, rows, base int, ceiling time.Duration) (int64, error) {
	compact := "compact"
	resp, err := adm.CreateTopics(ctx, 6, 1, map[string]*string{"cleanup.policy": &compact}, topic)
	if err != nil {
		return 0, err
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			return 0, fmt.Errorf("create %s: %w", r.Topic, r.Err)
		}
	}
	err = waitUntil(ctx, ceiling, 100*time.Millisecond, "a leader for each partition of the table topic "+topic, func() (bool, string) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false, "metadata: " + err.Error()
		}
		return topicsReady(md, []string{topic}, 6)
	})
	if err != nil {
		return 0, err
	}
	var total int64
	var perr atomic.Pointer[error]
	var wg sync.WaitGroup
	for i := range rows {
		k := strconv.Itoa(base + i)
		v := tableRow(base + i)
		total += int64(len(v))
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(k), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.CompareAndSwap(nil, &err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if p := perr.Load(); p != nil {
		return 0, fmt.Errorf("fill %s: %w", topic, *p)
	}
	return total, nil
}

// tableRow is user k's row: about 60 bytes, no tier "muted" (the lookup
// contender's predicate keeps W1's routing).
func tableRow(k int) []byte {
	return fmt.Appendf(nil, `{"user_id":%d,"tier":"%s","region":"eu-west-1"}`, k, []string{"vip", "basic", "trial"}[k%3])
}

// valueTopics are the outputs of a run that carry input values (read
// back by the verification and the latency consumer).
func valueTopics(c contender, prefix string) []string {
	return append(outputs(prefix, valueSuffixes), c.extraOutputs(prefix)...)
}

// outputTopics are every output of a run: the harness creates and counts
// them.
func outputTopics(c contender, prefix string) []string {
	return append(outputs(prefix, outputSuffixes), c.extraOutputs(prefix)...)
}

// sessionUsesLookup says whether cs needs the lookup table.
func sessionUsesLookup(cs []contender) bool {
	for _, c := range cs {
		if c.Feature == featLookup {
			return true
		}
	}
	return false
}
