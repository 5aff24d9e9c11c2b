package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/readback"
)

// A contender is one program the compare harness measures.
type contender struct {
	Name      string `json:"name"`
	Engine    string `json:"engine"`    // limit, sidestream, kafka-streams, goka
	Workload  string `json:"workload"`  // pass, w1, w2
	Guarantee string `json:"guarantee"` // alo, eos
	// Feature: the one feature a feature contender (featureContenders)
	// turns on over its workload; "" for the default contenders.
	Feature string `json:"feature,omitempty"`
}

// allContenders in table order.
var allContenders = []contender{
	{"limit-alo", "limit", "pass", "alo", ""},
	{"limit-eos", "limit", "pass", "eos", ""},
	{"sidestream-w1-alo", "sidestream", "w1", "alo", ""},
	{"sidestream-w1-eos", "sidestream", "w1", "eos", ""},
	{"sidestream-w2-alo", "sidestream", "w2", "alo", ""},
	{"sidestream-w2-eos", "sidestream", "w2", "eos", ""},
	{"sidestream-w3-alo", "sidestream", "w3", "alo", ""},
	{"sidestream-w3-eos", "sidestream", "w3", "eos", ""},
	{"streams-w1-alo", "kafka-streams", "w1", "alo", ""},
	{"streams-w1-eos", "kafka-streams", "w1", "eos", ""},
	{"streams-w2-alo", "kafka-streams", "w2", "alo", ""},
	{"streams-w2-eos", "kafka-streams", "w2", "eos", ""},
	{"goka-w1-alo", "goka", "w1", "alo", ""},
}

// outputSuffixes are the topics every contender may write, PREFIX.<suffix>.
var outputSuffixes = []string{"main", "warn", "error", "dirty", "window", "late", "assembled", "incomplete"}

// valueSuffixes are the outputs that carry input values (and their ids):
// the latency consumer reads these.
var valueSuffixes = []string{"main", "warn", "error", "dirty"}

// compareEnv is what a contender's command needs.
type compareEnv struct {
	self, topologies, streamsDir, gokaBin, javaHeap, logDir string
	profileDir, heapDir                                     string        // Go contenders write <id>.pprof, <id>.heap.pprof here
	tableTopic                                              string        // the lookup contender's table, filled by the session
	reloadEvery                                             time.Duration // the reload contender's interval
	extra                                                   []string      // one run's feature flags (featureRun.args)
}

func (c contender) command(env compareEnv, brokers, input, prefix, group string) (*exec.Cmd, error) {
	switch c.Engine {
	case "limit", "sidestream":
		if c.Engine == "sidestream" {
			// A workload this build cannot run (W3 before assembly
			// existed) is skipped with the reason, not failed.
			if _, err := workloadTopology(filepath.Join(env.topologies, c.Workload+".yaml"), "alo", "x", "x", "x", []string{"127.0.0.1:1"}); err != nil {
				return nil, fmt.Errorf("this build cannot run %s: %v", c.Workload, err)
			}
		}
		args := []string{"contender", "--workload", c.Workload, "--guarantee", c.Guarantee,
			"--brokers", brokers, "--input", input, "--prefix", prefix, "--group", group, "--topologies", env.topologies}
		if env.profileDir != "" {
			args = append(args, "--cpuprofile", filepath.Join(env.profileDir, group+".pprof"))
		}
		if env.heapDir != "" {
			args = append(args, "--heapprofile", filepath.Join(env.heapDir, group+".heap.pprof"))
		}
		args = append(args, env.extra...)
		return exec.Command(env.self, args...), nil
	case "kafka-streams":
		if env.streamsDir == "" {
			return nil, errors.New("no --streams-dir")
		}
		if _, err := os.Stat(filepath.Join(env.streamsDir, "target", "classes")); err != nil {
			return nil, fmt.Errorf("not built (mvn -q package in %s)", env.streamsDir)
		}
		g := "exactly_once_v2"
		if c.Guarantee == "alo" {
			g = "at_least_once"
		}
		cp := filepath.Join(env.streamsDir, "target", "classes") + ":" + filepath.Join(env.streamsDir, "target", "lib", "*")
		return exec.Command("java", "-Xmx"+env.javaHeap, "-XX:+UseG1GC", "-cp", cp,
			"sidestream.bench.StreamsPeer", brokers, input, prefix, group, c.Workload, g), nil
	case "goka":
		if env.gokaBin == "" {
			return nil, errors.New("no --goka-bin")
		}
		if _, err := os.Stat(env.gokaBin); err != nil {
			return nil, fmt.Errorf("not built: %w", err)
		}
		return exec.Command(env.gokaBin, brokers, input, prefix, group), nil
	}
	return nil, fmt.Errorf("unknown engine %q", c.Engine)
}

// run is one measured throughput run of one contender.
type run struct {
	Contender  string  `json:"contender"`
	Rep        int     `json:"rep"`
	Records    int     `json:"records"`
	Seconds    float64 `json:"seconds"` // first output record → every input offset committed
	RecordsPS  float64 `json:"records_per_s"`
	MBPS       float64 `json:"mb_per_s"`
	CPUSeconds float64 `json:"cpu_s"`       // contender process, user+system, over Seconds
	CPUPerM    float64 `json:"cpu_s_per_m"` // CPU seconds per million records
	PeakRSSMB  float64 `json:"peak_rss_mb"` // VmHWM of the contender process
	Outputs    int64   `json:"output_offsets"`
	StartupS   float64 `json:"startup_s"` // process start → first output record
	LoadAvg    float64 `json:"loadavg_1m"`
	Verified   bool    `json:"verified"` // outputs read back: every input id there (once under exactly-once)
	// Feature: what a feature contender did with its feature (reloads
	// applied, lookups, computed topics, spans), checked after the window.
	Feature *featureStats `json:"feature,omitempty"`
}

// latency is one contender's end-to-end latency at a fixed offered load.
type latency struct {
	Contender string `json:"contender"`
	Rep       int    `json:"rep"`
	// AtRateOf: the phase was offered the rate of that contender's phase
	// (the same offered load, for the p99 goal), not its own.
	AtRateOf string  `json:"at_rate_of,omitempty"`
	RatePS   float64 `json:"offered_per_s"`
	Sent     int     `json:"sent"`
	SentPS   float64 `json:"achieved_per_s"` // what the harness managed to send
	// MachineBusy: the share of all the machine's cores that was busy
	// while the phase sent (every process: broker, harness, contender).
	MachineBusy float64 `json:"machine_busy"`
	Timed       int     `json:"timed"` // sent records that carry an id (not the empty ones)
	Seen        int     `json:"seen"`
	P50MS       float64 `json:"p50_ms"`
	P99MS       float64 `json:"p99_ms"`
	MaxMS       float64 `json:"max_ms"`
	// The two parts of each timed record's latency: from the harness's
	// Produce call to the broker's acknowledgement (the harness's
	// producer and the broker's append, on the same cores), and from the
	// acknowledgement to the record's output being visible (the
	// contender, its transaction and the read_committed reader).
	AckP50MS      float64 `json:"acked_p50_ms"`
	AckP99MS      float64 `json:"acked_p99_ms"`
	AfterAckP50MS float64 `json:"after_ack_p50_ms"`
	AfterAckP99MS float64 `json:"after_ack_p99_ms"`
}

// row is one line of the table: medians of a contender's runs.
type row struct {
	contender
	Runs      int     `json:"runs"`
	RecordsPS float64 `json:"records_per_s"`
	MBPS      float64 `json:"mb_per_s"`
	CPUPerM   float64 `json:"cpu_s_per_m"`
	PerCPUS   float64 `json:"records_per_cpu_s"`
	PeakRSSMB float64 `json:"peak_rss_mb"`
	Ratio     float64 `json:"ratio_to_limit_alo"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	// AfterAckP99MS: the p99 from the broker's acknowledgement of the
	// harness's record to its output being visible (latency.AfterAckP99MS).
	AfterAckP99MS float64 `json:"after_ack_p99_ms"`
	// LatencyPS is the rate its own latency phases were offered. P50MS,
	// P99MS and AfterAckP99MS are the medians of the latency repetitions'
	// figures.
	LatencyPS float64 `json:"latency_offered_per_s"`
	// The phases at the p99 goal's load (goalLoadPair only): the rate
	// offered, the medians of what the harness sent, of the p99 and of
	// the machine's busy share, and the lowest sent/offered of them.
	GoalPS      float64 `json:"goal_load_offered_per_s,omitempty"`
	GoalSentPS  float64 `json:"goal_load_sent_per_s,omitempty"`
	GoalSentMin float64 `json:"goal_load_sent_share_min,omitempty"`
	GoalP99MS   float64 `json:"goal_load_p99_ms,omitempty"`
	GoalBusy    float64 `json:"goal_load_machine_busy,omitempty"`
	Seen        string  `json:"latency_seen"`
	Skipped     string  `json:"skipped,omitempty"`
}

// report is the JSON the harness writes.
type report struct {
	Command     string    `json:"command"`
	Time        time.Time `json:"time"`
	Machine     machine   `json:"machine"`
	Records     int       `json:"records"`
	Bytes       int64     `json:"input_bytes"`
	Reps        int       `json:"repetitions"`
	LatencyS    float64   `json:"latency_seconds"`
	LatencyReps int       `json:"latency_repetitions"`
	P99Share    float64   `json:"p99_share"` // the p99 goal's load, a share of limit-eos's throughput
	Rows        []row     `json:"rows"`
	Runs        []run     `json:"runs"`
	Latencies   []latency `json:"latencies"`
	Goals       []goal    `json:"goals"`
}

type machine struct {
	CPU          string `json:"cpu"`
	Cores        int    `json:"cores"`
	MemGB        int    `json:"mem_gb"`
	Go           string `json:"go"`
	Kafka        string `json:"kafka"`
	LoadStart    string `json:"loadavg_start"`
	LoadEnd      string `json:"loadavg_end"`
	SharedLoaded bool   `json:"shared_loaded"`
}

type goal struct {
	What     string  `json:"what"`
	Want     string  `json:"want"`
	Measured float64 `json:"measured"`
	Met      *bool   `json:"met"`            // nil: not measured (a contender missing)
	Note     string  `json:"note,omitempty"` // the conditions of the figure, or why it is unmeasured
}

// compareFlags are the flags of throughput compare.
type compareFlags struct {
	brokers, only, topologies, streamsDir, gokaBin, javaHeap string
	kafkaVersion, docs, jsonOut, png, command, profileDir    string
	heapDir                                                  string
	records, reps, latReps, parallel                         int
	reloadEvery                                              time.Duration
	latSecs, latRate, p99Share                               float64
	smoke, verify                                            bool
	ceiling, timeout                                         time.Duration
}

func parseCompareFlags(args []string) *compareFlags {
	f := &compareFlags{}
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	fs.StringVar(&f.brokers, "brokers", "127.0.0.1:29192", "the real broker (scripts/kafka.sh up)")
	fs.IntVar(&f.records, "records", 1_000_000, "records to preload into the 6-partition input")
	fs.IntVar(&f.reps, "reps", 3, "repetitions of every throughput run (order alternates)")
	fs.Float64Var(&f.latSecs, "latency-seconds", 10, "length of the paced latency phase per contender")
	fs.IntVar(&f.latReps, "latency-reps", 3, "repetitions of every latency phase (the table has the median of their p50s and p99s)")
	fs.Float64Var(&f.p99Share, "p99-share", 0.15, "the p99 goal's load: sidestream-w1-eos and limit-eos also get latency phases at this share of limit-eos's median records/s (0: none)")
	fs.Float64Var(&f.latRate, "latency-rate", 0, "offer every contender's latency phase this many records/s (default: half its own median records/s)")
	fs.StringVar(&f.only, "contenders", "", "comma-separated contenders (default all but the feature contenders); names: "+names())
	fs.DurationVar(&f.reloadEvery, "reload-every", 10*time.Second, "sidestream-w1-eos-reload: a reload (SIGHUP) when its window opens and then every this long")
	fs.BoolVar(&f.smoke, "smoke", false, "a quick check that every contender works: 3000 records, contenders --parallel at a time, a 1 s latency phase at 500 records/s whose every record must be seen, no files written")
	fs.IntVar(&f.parallel, "parallel", 1, "with --smoke: contenders run at once (each is several processes and ~100 partitions on one broker)")
	fs.DurationVar(&f.ceiling, "wait", 3*time.Minute, "ceiling of every wait on the broker or a contender (topic leaders, first output, the smoke's drain); a wait ends as soon as its condition holds")
	fs.StringVar(&f.topologies, "topologies", "bench/topologies", "directory of the workload topologies")
	fs.StringVar(&f.streamsDir, "streams-dir", "bench/peers/kafka-streams", "the Kafka Streams peer (built with mvn package)")
	fs.StringVar(&f.gokaBin, "goka-bin", "", "the Goka peer binary (go build -C bench/peers/goka)")
	fs.StringVar(&f.javaHeap, "java-heap", "512m", "Kafka Streams maximum heap (-Xmx)")
	fs.StringVar(&f.kafkaVersion, "kafka-version", "", "broker version, for the record")
	fs.StringVar(&f.docs, "docs", "docs/benchmarks.md", "Markdown file whose compare section is replaced ('' for none)")
	fs.StringVar(&f.jsonOut, "json", "bench/results/compare.json", "JSON report ('' for none)")
	fs.StringVar(&f.png, "png", "docs/benchmarks-compare.png", "chart ('' for none)")
	fs.StringVar(&f.command, "command", "bench/compare.sh", "the command line to record")
	fs.DurationVar(&f.timeout, "run-timeout", 5*time.Minute, "give up a run after")
	fs.BoolVar(&f.verify, "verify", false, "read every run's outputs back and check every input id is there, once under exactly-once (always on with --smoke; slow at 1 M records)")
	fs.StringVar(&f.heapDir, "heapprofile-dir", "", "the Go contenders write the heap profile of their largest live heap to DIR/<run id>.heap.pprof (a few profiles per run: it costs a little CPU)")
	fs.StringVar(&f.profileDir, "cpuprofile-dir", "", "the Go contenders (limit, sidestream) write a CPU profile of each process to DIR/<run id>.pprof")
	_ = fs.Parse(args)
	if f.smoke {
		f.records, f.reps, f.latSecs = 3000, 1, 1
		f.docs, f.jsonOut, f.png = "", "", ""
	}
	return f
}

// compareSession is one compare run: the broker, the preloaded input, the
// contenders still in the session and the report as it fills.
type compareSession struct {
	f       *compareFlags
	ctx     context.Context
	adm     *kadm.Client
	env     compareEnv
	bs      []string
	stamp   string
	input   string
	latDur  time.Duration
	logDir  string
	rep     report
	skipped map[string]string // contender -> why it is not in the table
	active  []contender
	failed  bool
}

func cmdCompare(args []string) error {
	f := parseCompareFlags(args)
	cs, err := pick(f.only)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logDir, err := os.MkdirTemp("", "sidestream-compare-")
	if err != nil {
		return err
	}
	bs := strings.Split(f.brokers, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	stamp := strconv.FormatInt(time.Now().Unix(), 36)
	s := &compareSession{
		f: f, ctx: context.Background(), adm: kadm.NewClient(cl), bs: bs, stamp: stamp, input: "bench-logs-" + stamp,
		env: compareEnv{self: self, topologies: f.topologies, streamsDir: f.streamsDir, gokaBin: f.gokaBin, javaHeap: f.javaHeap, logDir: logDir, profileDir: f.profileDir, heapDir: f.heapDir,
			reloadEvery: f.reloadEvery},
		latDur: time.Duration(f.latSecs * float64(time.Second)), logDir: logDir, skipped: map[string]string{},
		rep: report{Command: f.command, Time: time.Now().UTC(), Records: f.records, Reps: f.reps, LatencyS: f.latSecs, LatencyReps: f.latReps, P99Share: f.p99Share,
			Machine: describeMachine(f.kafkaVersion)},
	}
	logf("preloading %d records into %s (6 partitions), not timed", f.records, s.input)
	if s.rep.Bytes, err = preloadTopic(s.ctx, s.adm, cl, s.input, f.records, 1, f.ceiling); err != nil {
		return err
	}
	if sessionUsesLookup(cs) {
		s.env.tableTopic = "bench-users-" + stamp
		logf("filling the lookup table %s: %d rows, compacted, not timed", s.env.tableTopic, tableRows)
		if _, err := fillTable(s.ctx, s.adm, cl, s.env.tableTopic, tableRows, tableBase, f.ceiling); err != nil {
			return err
		}
		defer func() { _ = deleteTopics(s.ctx, s.adm, func(t string) bool { return t == s.env.tableTopic }) }()
	}
	s.pickActive(cs)
	if f.smoke {
		if err := s.smokeRuns(); err != nil {
			return err
		}
	} else {
		s.throughputReps()
	}
	med := medians(s.rep.Runs)
	for name := range med {
		if s.skipped[name] != "" {
			delete(med, name) // a contender that failed once is not reported
		}
	}
	if !f.smoke {
		s.latencyRuns(med)
	}
	_ = deleteTopics(s.ctx, s.adm, func(t string) bool { return t == s.input })
	s.rep.Machine.LoadEnd = loadavg()
	s.rep.Rows = rows(cs, med, s.rep.Runs, s.rep.Latencies, s.skipped)
	s.rep.Goals = goals(s.rep.Rows)
	return s.finish()
}

// pickActive leaves out the contenders that cannot run here (a peer not
// built), saying why.
func (s *compareSession) pickActive(cs []contender) {
	for _, c := range cs {
		if _, err := c.command(s.env, "x", "x", "x", "x"); err != nil {
			s.skipped[c.Name] = err.Error()
			logf("%s: skipped: %v", c.Name, err)
			continue
		}
		s.active = append(s.active, c)
	}
}

// smokeRuns: numbers from a smoke run mean nothing: the check is that
// each contender starts, finishes the input and answers the latency probe.
// A few at a time at most: all 13 at once had one broker on 2 cores
// creating hundreds of partitions together.
func (s *compareSession) smokeRuns() error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(s.f.parallel, 1))
	errs := make([]error, len(s.active))
	for i, c := range s.active {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			x, l, err := s.smokeOne(c)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			s.rep.Runs, s.rep.Latencies = append(s.rep.Runs, x), append(s.rep.Latencies, l)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("smoke: %w (logs in %s)", err, s.logDir)
	}
	return nil
}

// smokeOne runs one contender's throughput run (read back) and its
// latency probe (every record seen).
func (s *compareSession) smokeOne(c contender) (run, latency, error) {
	f := s.f
	x, err := throughputRun(s.ctx, s.adm, s.env, c, s.bs, s.input, fmt.Sprintf("t%s-%s", s.stamp, c.Name), f.records, s.rep.Bytes, f.timeout, f.ceiling, true)
	if err != nil {
		logf("smoke %-18s FAILED: %v", c.Name, err)
		return x, latency{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	l, err := latencyRun(s.ctx, s.adm, s.env, c, s.bs, fmt.Sprintf("l%s-%s", s.stamp, c.Name), f.records, 500, s.latDur, f.ceiling, true)
	if err != nil {
		logf("smoke %-18s latency FAILED: %v", c.Name, err)
		return x, l, fmt.Errorf("%s latency: %w", c.Name, err)
	}
	x.Rep = 1
	logf("smoke %-18s ok: %d records in %.1f s, every id read back, %d/%d probe records seen%s", c.Name, x.Records, x.Seconds, l.Seen, l.Timed, x.Feature.note())
	return x, l, nil
}

// throughputReps runs every contender reps times, the order reversed on
// even repetitions.
func (s *compareSession) throughputReps() {
	f, n := s.f, 0
	for r := 1; r <= f.reps; r++ {
		order := slices.Clone(s.active)
		if r%2 == 0 {
			slices.Reverse(order)
		}
		for _, c := range order {
			if s.skipped[c.Name] != "" {
				continue
			}
			n++
			id := fmt.Sprintf("t%s-%d-%s", s.stamp, n, c.Name)
			x, err := throughputRun(s.ctx, s.adm, s.env, c, s.bs, s.input, id, f.records, s.rep.Bytes, f.timeout, f.ceiling, f.verify)
			if err != nil {
				// One failing contender does not cost the others' figures:
				// it leaves the session, and the table says why.
				logf("%s (rep %d) failed, dropped from the session: %v (logs in %s)", c.Name, r, err, s.logDir)
				s.skipped[c.Name] = "failed in rep " + strconv.Itoa(r) + ": " + firstLine(err.Error())
				s.failed = true
				continue
			}
			x.Rep = r
			s.rep.Runs = append(s.rep.Runs, x)
			logf("rep %d/%d %-18s %9.0f records/s %6.1f MB/s %6.2f CPU s/M %6.0f MB RSS (load %.1f)%s",
				r, f.reps, c.Name, x.RecordsPS, x.MBPS, x.CPUPerM, x.PeakRSSMB, x.LoadAvg, x.Feature.note())
		}
	}
}

// latencyRuns runs each contender's paced latency phase at half its
// median throughput (or --latency-rate), --latency-reps times in
// alternating order; and goalLoadPair's again at the p99 goal's load
// (--p99-share of limit-eos's throughput), so that the goal compares the
// two at one load that saturates neither them nor the machine.
func (s *compareSession) latencyRuns(med map[string]run) {
	type phase struct {
		c        contender
		atRateOf string
	}
	var phases []phase
	for _, c := range s.active {
		if s.skipped[c.Name] != "" {
			continue
		}
		phases = append(phases, phase{c: c})
		if slices.Contains(goalLoadPair, c.Name) && s.f.p99Share > 0 && med["limit-eos"].RecordsPS > 0 {
			phases = append(phases, phase{c: c, atRateOf: atGoalLoad})
		}
	}
	for r := 1; r <= s.f.latReps; r++ {
		order := slices.Clone(phases)
		if r%2 == 0 {
			slices.Reverse(order)
		}
		for _, ph := range order {
			rate := 0.5 * med[ph.c.Name].RecordsPS
			switch {
			case ph.atRateOf == atGoalLoad:
				rate = s.f.p99Share * med["limit-eos"].RecordsPS
			case s.f.latRate > 0:
				rate = s.f.latRate
			}
			id := fmt.Sprintf("l%s-%d-%s", s.stamp, r, ph.c.Name)
			if ph.atRateOf != "" {
				id += "-at-" + ph.atRateOf
			}
			l, err := latencyRun(s.ctx, s.adm, s.env, ph.c, s.bs, id, s.f.records, rate, s.latDur, s.f.ceiling, false)
			if err != nil {
				logf("%s latency failed: %v (logs in %s)", ph.c.Name, err, s.logDir)
				s.failed = true
				continue
			}
			l.Rep, l.AtRateOf = r, ph.atRateOf
			s.rep.Latencies = append(s.rep.Latencies, l)
			name := ph.c.Name
			if ph.atRateOf != "" {
				name += " (the p99 goal's load)"
			}
			logf("latency %d/%d %-18s at %7.0f records/s (sent %7.0f/s, machine %3.0f%% busy): p50 %6.1f ms  p99 %6.1f ms  (%d/%d seen); to the ack p50 %.1f p99 %.1f ms, after it p50 %.1f p99 %.1f ms",
				r, s.f.latReps, name, l.RatePS, l.SentPS, 100*l.MachineBusy, l.P50MS, l.P99MS, l.Seen, l.Timed, l.AckP50MS, l.AckP99MS, l.AfterAckP50MS, l.AfterAckP99MS)
		}
	}
}

// finish prints the table and writes the JSON, the chart and the docs
// block; a smoke run checks that every contender measured something.
func (s *compareSession) finish() error {
	f, rep := s.f, s.rep
	printTable(os.Stdout, rep)
	if f.jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.MkdirAll(filepath.Dir(f.jsonOut), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if f.png != "" {
		if err := drawChart(f.png, rep); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
	}
	if f.docs != "" {
		if err := writeDocs(f.docs, rep, f.png); err != nil {
			return err
		}
	}
	if s.failed {
		return fmt.Errorf("some runs failed (the table says which; logs in %s)", s.logDir)
	}
	if f.smoke {
		for _, r := range rep.Rows {
			if r.Skipped == "" && (r.RecordsPS <= 0 || r.Seen == "" || strings.HasPrefix(r.Seen, "0/")) {
				return fmt.Errorf("smoke: %s measured nothing (%+v)", r.Name, r)
			}
		}
		_ = os.RemoveAll(s.logDir)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func names() string {
	var s []string
	for _, c := range allContenders {
		s = append(s, c.Name)
	}
	for _, c := range featureContenders {
		s = append(s, c.Name+" (only when named)")
	}
	return strings.Join(s, ", ")
}

func pick(only string) ([]contender, error) {
	if only == "" {
		return allContenders, nil
	}
	var cs []contender
	for _, n := range strings.Split(only, ",") {
		known := slices.Concat(allContenders, featureContenders)
		i := slices.IndexFunc(known, func(c contender) bool { return c.Name == strings.TrimSpace(n) })
		if i < 0 {
			return nil, fmt.Errorf("unknown contender %q (%s)", n, names())
		}
		cs = append(cs, known[i])
	}
	return cs, nil
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", a...)
}

// preloadTopic creates a 6-partition topic and fills it with n generated
// log events; it returns their total value bytes.
func preloadTopic(ctx context.Context, adm *kadm.Client, cl *kgo.Client, topic string, n int, seed uint64, ceiling time.Duration) (int64, error) {
	if err := createTopics(ctx, adm, ceiling, topic); err != nil {
		return 0, err
	}
	g := gen.New(seed)
	var total int64
	var perr atomic.Pointer[error]
	var wg sync.WaitGroup
	for range n {
		ev := g.Next()
		total += int64(len(ev.Value))
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: ev.Key, Value: ev.Value}, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.CompareAndSwap(nil, &err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if p := perr.Load(); p != nil {
		return 0, fmt.Errorf("preload: %w", *p)
	}
	return total, nil
}

// createTopics creates 6-partition topics and waits, up to ceiling, until
// every partition has a leader: a new topic reaches the broker's metadata
// a while after the controller answers (10-20 s seen on a loaded 2-core
// machine), and a contender started before that finds no input.
//
// The topics never expire by time: the generator's event times are months
// old, and a contender that stamps its outputs with the event time (Kafka
// Streams' W2 does) would have them deleted by the broker's retention
// before the harness reads them back. The harness deletes them itself.
func createTopics(ctx context.Context, adm *kadm.Client, ceiling time.Duration, topics ...string) error {
	retain := "-1"
	resp, err := adm.CreateTopics(ctx, 6, 1, map[string]*string{"retention.ms": &retain}, topics...)
	if err != nil {
		return err
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !strings.Contains(r.Err.Error(), "TOPIC_ALREADY_EXISTS") {
			return fmt.Errorf("create %s: %w", r.Topic, r.Err)
		}
	}
	return waitUntil(ctx, ceiling, 100*time.Millisecond, fmt.Sprintf("a leader for each of the 6 partitions of %d topics %v", len(topics), topics), func() (bool, string) {
		md, err := adm.Metadata(ctx, topics...)
		if err != nil {
			return false, "metadata: " + err.Error()
		}
		return topicsReady(md, topics, 6)
	})
}

// topicsReady says whether every topic has n partitions with a leader, and
// if not, what is missing.
func topicsReady(md kadm.Metadata, topics []string, n int) (bool, string) {
	var missing []string
	leaderless := 0
	for _, t := range topics {
		d, ok := md.Topics[t]
		switch {
		case !ok:
			missing = append(missing, t+" (absent)")
			continue
		case d.Err != nil:
			missing = append(missing, t+" ("+d.Err.Error()+")")
			continue
		case len(d.Partitions) != n:
			missing = append(missing, fmt.Sprintf("%s (%d partitions)", t, len(d.Partitions)))
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				leaderless++
			}
		}
	}
	if len(missing) == 0 && leaderless == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("%d of %d topics not ready %v, %d partitions without a leader", len(missing), len(topics), missing, leaderless)
}

// waitUntil polls cond every interval until it holds, ctx ends or ceiling
// passes; the error says what was awaited, for how long, and what the last
// poll saw.
func waitUntil(ctx context.Context, ceiling, every time.Duration, what string, cond func() (ok bool, seen string)) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, ceiling)
	defer cancel()
	for {
		ok, seen := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waited %v for %s; last seen: %s", time.Since(start).Round(time.Millisecond), what, seen)
		case <-time.After(every):
		}
	}
}

func deleteTopics(ctx context.Context, adm *kadm.Client, match func(string) bool) error {
	td, err := adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	var del []string
	for _, t := range td.Names() {
		if match(t) {
			del = append(del, t)
		}
	}
	if len(del) == 0 {
		return nil
	}
	_, err = adm.DeleteTopics(ctx, del...)
	return err
}

func outputs(prefix string, suffixes []string) []string {
	var ts []string
	for _, s := range suffixes {
		ts = append(ts, prefix+"."+s)
	}
	return ts
}

// proc is a started contender process.
type proc struct {
	cmd  *exec.Cmd
	done chan error
	log  string

	stopOnce sync.Once
	stopErr  error
}

func startContender(env compareEnv, c contender, brokers []string, input, id string) (*proc, error) {
	cmd, err := c.command(env, strings.Join(brokers, ","), input, id, id)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(env.logDir, id+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan error, 1), log: logPath}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	return p, nil
}

// stop ends the contender with SIGTERM, then SIGKILL after 30 s, and
// returns how it exited (a stopped contender's exit is not the measure).
// Only the first call stops it; later ones return the same.
func (p *proc) stop() error {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case p.stopErr = <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			p.stopErr = <-p.done
		}
	})
	return p.stopErr
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// throughputRun starts a contender on the preloaded input and measures it
// from its first output record to the moment its group has committed every
// input offset (and, for windows, the repartition topics it consumes).
//
// With verify, the value-carrying outputs are read back read_committed:
// every input id must be there, once under exactly-once.
func throughputRun(ctx context.Context, adm *kadm.Client, env compareEnv, c contender, brokers []string, input, id string, n int, inBytes int64, timeout, ceiling time.Duration, verify bool) (run, error) {
	res := run{Contender: c.Name, Records: n}
	outs := outputTopics(c, id)
	if err := createTopics(ctx, adm, ceiling, outs...); err != nil {
		return res, err
	}
	fr, err := newFeatureRun(c, env)
	if err != nil {
		return res, err
	}
	defer fr.close()
	env.extra = fr.args
	defer func() {
		_ = deleteTopics(context.WithoutCancel(ctx), adm, func(t string) bool {
			return strings.HasPrefix(t, id+".") || strings.HasPrefix(t, id+"-")
		})
	}()
	inEnd, err := adm.ListEndOffsets(ctx, input)
	if err != nil {
		return res, err
	}
	begin := time.Now()
	p, err := startContender(env, c, brokers, input, id)
	if err != nil {
		return res, err
	}
	defer func() { _ = p.stop() }()
	defer fr.stopDriver() // before the stop: no SIGHUP to a stopping process
	pid := strconv.Itoa(p.cmd.Process.Pid)
	var start time.Time
	var cpu0 float64
	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-p.done:
			p.done <- err
			return res, fmt.Errorf("contender exited: %v\n%s", err, p.tail())
		case <-deadline:
			return res, fmt.Errorf("not done after %v\n%s", timeout, p.tail())
		case <-tick.C:
		}
		if start.IsZero() {
			end, err := adm.ListEndOffsets(ctx, outs...)
			if err == nil && sumOffsets(end) > 0 {
				start, cpu0 = time.Now(), cpuSeconds(pid)
				res.StartupS = start.Sub(begin).Seconds()
				fr.begin(p)
			}
			continue
		}
		done, err := caughtUp(ctx, adm, id, input, inEnd)
		if err != nil || !done {
			continue
		}
		now, cpu1, hwm := time.Now(), cpuSeconds(pid), peakRSS(pid)
		res.Seconds = now.Sub(start).Seconds()
		res.CPUSeconds = cpu1 - cpu0
		res.PeakRSSMB = hwm
		break
	}
	res.rates(n, inBytes)
	if end, err := adm.ListEndOffsets(ctx, outs...); err == nil {
		res.Outputs = sumOffsets(end)
	}
	if res.Outputs < int64(n) {
		return res, fmt.Errorf("outputs hold %d offsets for %d inputs\n%s", res.Outputs, n, p.tail())
	}
	if res.Feature, err = fr.check(ctx, adm, p, id, n, ceiling); err != nil {
		return res, fmt.Errorf("%s: %w\n%s", c.Feature, err, p.tail())
	}
	if verify {
		if err := verifyRun(ctx, brokers, c, id, n, ceiling); err != nil {
			return res, fmt.Errorf("verify: %w\n%s", err, p.tail())
		}
		res.Verified = true
	}
	return res, nil
}

// rates are a run's per-second and per-record figures, from its seconds
// and CPU seconds, and the load average at its end.
func (r *run) rates(n int, inBytes int64) {
	r.RecordsPS = float64(n) / r.Seconds
	r.MBPS = float64(inBytes) / r.Seconds / 1e6
	r.CPUPerM = r.CPUSeconds / float64(n) * 1e6
	r.LoadAvg, _ = strconv.ParseFloat(strings.Fields(loadavg())[0], 64)
}

// verifyRun reads back every id of the run's outputs, within ceiling.
func verifyRun(ctx context.Context, brokers []string, c contender, id string, n int, ceiling time.Duration) error {
	vctx, cancel := context.WithTimeout(ctx, ceiling)
	defer cancel()
	return verifyIDs(vctx, brokers, valueTopics(c, id), n, c.Guarantee == "eos")
}

// verifyIDs reads topics read_committed to their stable ends and checks
// that every generated id e-1 ... e-n is there: once each when exactly.
func verifyIDs(ctx context.Context, brokers, topics []string, n int, exactly bool) error {
	rs, err := readback.ReadCommitted(ctx, brokers, topics...)
	if err != nil {
		return err
	}
	seen := make(map[string]int, n)
	for _, r := range rs {
		seen[gen.IDOf(r.Key, r.Value)]++
	}
	missing, dup := 0, 0
	for i := 1; i <= n; i++ {
		switch k := seen["e-"+strconv.Itoa(i)]; {
		case k == 0:
			missing++
		case k > 1:
			dup++
		}
	}
	if missing > 0 || (exactly && dup > 0) || len(seen) != n {
		return fmt.Errorf("%d records read, %d distinct ids for %d inputs: %d missing, %d duplicated", len(rs), len(seen), n, missing, dup)
	}
	return nil
}

func sumOffsets(l kadm.ListedOffsets) int64 {
	var s int64
	l.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			s += o.Offset
		}
	})
	return s
}

// caughtUp says whether the group has committed every input offset and is
// within one offset (a transaction marker) of the end of every repartition
// topic of its application.
func caughtUp(ctx context.Context, adm *kadm.Client, group, input string, inEnd kadm.ListedOffsets) (bool, error) {
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false, err
	}
	for _, ps := range inEnd {
		for p, o := range ps {
			c, ok := committed.Lookup(input, p)
			if !ok || c.At < o.Offset {
				return false, nil
			}
		}
	}
	td, err := adm.ListTopics(ctx)
	if err != nil {
		return false, err
	}
	var rep []string
	for _, t := range td.Names() {
		if strings.HasPrefix(t, group+"-") && strings.HasSuffix(t, "-repartition") {
			rep = append(rep, t)
		}
	}
	if len(rep) == 0 {
		return true, nil
	}
	end, err := adm.ListEndOffsets(ctx, rep...)
	if err != nil {
		return false, err
	}
	ok := true
	end.Each(func(o kadm.ListedOffset) {
		c, has := committed.Lookup(o.Topic, o.Partition)
		at := int64(0)
		if has {
			at = c.At
		}
		if o.Offset-at > 1 {
			ok = false
		}
	})
	return ok, nil
}

// peakRSS is VmHWM of a process, in MB.
func peakRSS(pid string) float64 { return statusMB(pid, "VmHWM:") }

// cpuTicks is the machine's CPU time from /proc/stat's first line, in
// clock ticks: all of it, and the idle part (idle and iowait).
type cpuTicks struct{ total, idle uint64 }

func machineCPU() cpuTicks {
	b, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(b), "\n")
	var t cpuTicks
	for i, f := range strings.Fields(line) {
		if i == 0 {
			continue // "cpu"
		}
		v, _ := strconv.ParseUint(f, 10, 64)
		if i <= 8 { // user nice system idle iowait irq softirq steal; guest is inside user
			t.total += v
		}
		if i == 4 || i == 5 {
			t.idle += v
		}
	}
	return t
}

// busySince is the share of the machine's CPU (all cores) that was busy
// between t0 and t, 0 when nothing could be read.
func (t cpuTicks) busySince(t0 cpuTicks) float64 {
	if t.total <= t0.total {
		return 0
	}
	return 1 - float64(t.idle-t0.idle)/float64(t.total-t0.total)
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// latencyRun starts a contender on an empty input of its own and offers it
// records at a fixed rate; a read_committed consumer of its outputs times
// each record from the moment it was produced to the moment it is
// visible. The records' event times continue where the preloaded stream's
// ended.
//
// With all (the smoke), the figures mean nothing and the check is that
// every timed record is seen: the phase waits for them up to ceiling and
// fails, with the contender's log tail, if any is missing. Otherwise a
// record not seen 10 s after the phase is counted as not seen.
func latencyRun(ctx context.Context, adm *kadm.Client, env compareEnv, c contender, brokers []string, id string, after int, rate float64, dur, ceiling time.Duration, all bool) (latency, error) {
	res := latency{Contender: c.Name, RatePS: rate}
	input := id + ".in"
	outs := outputTopics(c, id)
	if err := createTopics(ctx, adm, ceiling, append(outs, input)...); err != nil {
		return res, err
	}
	fr, err := newFeatureRun(c, env)
	if err != nil {
		return res, err
	}
	defer fr.close()
	env.extra = fr.args
	defer func() {
		_ = deleteTopics(context.WithoutCancel(ctx), adm, func(t string) bool {
			return strings.HasPrefix(t, id+".") || strings.HasPrefix(t, id+"-")
		})
	}()
	p, err := startContender(env, c, brokers, input, id)
	if err != nil {
		return res, err
	}
	defer func() { _ = p.stop() }()
	total := int(rate*dur.Seconds()) + 1
	pr := &latencyProbe{sent: make([]atomic.Int64, total+1), acked: make([]atomic.Int64, total+1), seenAt: make([]atomic.Int64, total+1), total: total}
	// From the start: the outputs are this run's own, created empty above.
	// At the end, a partition whose end the client resolved late (a loaded
	// machine) would skip the records written to it before: the smoke saw
	// 468 of 500 that way.
	// Both harness clients ask for metadata again after 250 ms, as the
	// contenders do (client.metadata_min_age): a NOT_LEADER on a topic
	// created just above held the paced records 5 s, and the phase's p50
	// with them (docs/benchmarks-history.md, "The 5 s stall").
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(valueTopics(c, id)...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(50*time.Millisecond), kgo.MetadataMinAge(config.DefaultMetadataMinAge))
	if err != nil {
		return res, err
	}
	defer cons.Close()
	cctx, stopCons := context.WithCancel(ctx)
	consDone := make(chan struct{})
	go func() {
		defer close(consDone)
		pr.consume(cctx, cons)
	}()
	defer func() { stopCons(); <-consDone }()

	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(input), kgo.ProducerLinger(0),
		kgo.MetadataMinAge(config.DefaultMetadataMinAge))
	if err != nil {
		return res, err
	}
	defer prod.Close()
	base := gen.New(1).Base + int64(after)*gen.New(1).Step + 10_000
	if err := pr.warmUp(ctx, prod, p, base, ceiling); err != nil {
		return res, err
	}
	fr.begin(p) // the reload contender reloads during the phase too
	defer fr.stopDriver()
	cpu0 := machineCPU()
	pr.pace(ctx, prod, &res, base, rate, dur)
	res.MachineBusy = machineCPU().busySince(cpu0)
	drain := 10 * time.Second
	if all {
		drain = ceiling
	}
	err = waitUntil(ctx, drain, 20*time.Millisecond, fmt.Sprintf("all %d timed records on the outputs", res.Timed), func() (bool, string) {
		n := int(pr.seen.Load())
		return n >= res.Timed, fmt.Sprintf("%d of %d", n, res.Timed)
	})
	if err != nil && all {
		return res, fmt.Errorf("%w\n%s", err, p.tail())
	}
	e2e, acked, afterAck := pr.split()
	res.Seen = len(e2e)
	res.P50MS, res.P99MS, res.MaxMS = quantile(e2e, 0.5), quantile(e2e, 0.99), quantile(e2e, 1)
	res.AckP50MS, res.AckP99MS = quantile(acked, 0.5), quantile(acked, 0.99)
	res.AfterAckP50MS, res.AfterAckP99MS = quantile(afterAck, 0.5), quantile(afterAck, 0.99)
	return res, nil
}

// latencyProbe is one latency phase's bookkeeping: when each timed record
// was sent, acknowledged by the broker and seen on the outputs (ns, by
// record number; 0: not yet).
type latencyProbe struct {
	total    int
	sent     []atomic.Int64
	acked    []atomic.Int64
	seenAt   []atomic.Int64
	seen     atomic.Int64
	warmSeen atomic.Bool
}

// consume reads the outputs until ctx ends, noting when each probe
// record is first seen.
func (pr *latencyProbe) consume(ctx context.Context, cons *kgo.Client) {
	for ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		now := time.Now().UnixNano()
		fs.EachRecord(func(r *kgo.Record) {
			i, ok := idNumber(r.Value)
			switch {
			case !ok:
				if bytes.Contains(r.Value, []byte(`"id":"w-`)) {
					pr.warmSeen.Store(true)
				}
			case i >= 1 && i <= pr.total && pr.sent[i].Load() > 0:
				if pr.seenAt[i].CompareAndSwap(0, now) {
					pr.seen.Add(1)
				}
			}
		})
	}
}

// split returns, sorted, the latencies of the records seen: sent to seen,
// sent to acknowledged and acknowledged to seen. An acknowledgement the
// harness received after the record was already seen counts 0 after it.
func (pr *latencyProbe) split() (e2e, acked, after []time.Duration) {
	for i := 1; i <= pr.total; i++ {
		sent, ack, seen := pr.sent[i].Load(), pr.acked[i].Load(), pr.seenAt[i].Load()
		if sent == 0 || seen == 0 {
			continue
		}
		e2e = append(e2e, time.Duration(seen-sent))
		if ack > 0 {
			acked = append(acked, time.Duration(ack-sent))
			after = append(after, time.Duration(max(seen-ack, 0)))
		}
	}
	for _, xs := range [][]time.Duration{e2e, acked, after} {
		slices.Sort(xs)
	}
	return e2e, acked, after
}

// quantile of sorted durations, in ms; 0 for none.
func quantile(xs []time.Duration, f float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return float64(xs[int(f*float64(len(xs)-1))]) / 1e6
}

// warmUp sends a probe every 100 ms until the consumer sees one: then its
// position is set and the contender answers.
func (pr *latencyProbe) warmUp(ctx context.Context, prod *kgo.Client, p *proc, base int64, ceiling time.Duration) error {
	wg := gen.New(7)
	wg.BadFraction, wg.Base = 0, base
	warmStart := time.Now()
	for sentWarm := 0; !pr.warmSeen.Load(); sentWarm++ {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("contender exited: %v\n%s", err, p.tail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Since(warmStart) > ceiling {
			return fmt.Errorf("waited %v for the first warm-up record on the outputs; %d sent, none seen\n%s", ceiling, sentWarm, p.tail())
		}
		ev := wg.Next()
		v := bytes.Replace(ev.Value, []byte(`"id":"e-`), []byte(`"id":"w-`), 1)
		prod.Produce(ctx, &kgo.Record{Value: v}, nil)
	}
	return nil
}

// pace sends the timed records at rate for dur. The harness shares the
// machine: when it cannot offer the rate, the phase still ends on time and
// SentPS says what was offered.
func (pr *latencyProbe) pace(ctx context.Context, prod *kgo.Client, res *latency, base int64, rate float64, dur time.Duration) {
	g := gen.New(3)
	g.Base = base
	begin := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for res.Sent < pr.total && time.Since(begin) < dur {
		<-tick.C
		due := min(pr.total, int(time.Since(begin).Seconds()*rate)+1)
		for res.Sent < due {
			ev := g.Next()
			ev.Value = bytes.Replace(ev.Value, []byte(`"id":"e-`), []byte(`"id":"l-`), 1)
			res.Sent++
			var promise func(*kgo.Record, error)
			if _, ok := idNumber(ev.Value); ok { // an empty value carries no id to time
				res.Timed++
				i := res.Sent
				pr.sent[i].Store(time.Now().UnixNano())
				promise = func(_ *kgo.Record, err error) {
					if err == nil {
						pr.acked[i].Store(time.Now().UnixNano())
					}
				}
			}
			prod.Produce(ctx, &kgo.Record{Key: ev.Key, Value: ev.Value}, promise)
		}
	}
	res.SentPS = float64(res.Sent) / time.Since(begin).Seconds()
}

// idNumber reads N of a latency record's "id":"l-N" without a regexp.
func idNumber(v []byte) (int, bool) {
	const mark = `"id":"l-`
	i := bytes.Index(v, []byte(mark))
	if i < 0 {
		return 0, false
	}
	n, j := 0, i+len(mark)
	for ; j < len(v) && v[j] >= '0' && v[j] <= '9'; j++ {
		n = n*10 + int(v[j]-'0')
	}
	return n, j > i+len(mark)
}

func medians(runs []run) map[string]run {
	by := map[string][]run{}
	for _, r := range runs {
		by[r.Contender] = append(by[r.Contender], r)
	}
	med := map[string]run{}
	for name, xs := range by {
		m := xs[0]
		pickMed := func(f func(run) float64) float64 { return medianBy(xs, f) }
		m.RecordsPS = pickMed(func(r run) float64 { return r.RecordsPS })
		m.MBPS = pickMed(func(r run) float64 { return r.MBPS })
		m.CPUPerM = pickMed(func(r run) float64 { return r.CPUPerM })
		m.PeakRSSMB = pickMed(func(r run) float64 { return r.PeakRSSMB })
		m.Rep = len(xs)
		med[name] = m
	}
	return med
}

func rows(cs []contender, med map[string]run, runs []run, lats []latency, skipped map[string]string) []row {
	limit := med["limit-alo"].RecordsPS
	var out []row
	for _, c := range cs {
		r := row{contender: c, Skipped: skipped[c.Name]}
		if m, ok := med[c.Name]; ok {
			r.Runs, r.RecordsPS, r.MBPS, r.CPUPerM, r.PeakRSSMB = m.Rep, m.RecordsPS, m.MBPS, m.CPUPerM, m.PeakRSSMB
			if m.CPUPerM > 0 {
				r.PerCPUS = 1e6 / m.CPUPerM
			}
			if limit > 0 {
				r.Ratio = m.RecordsPS / limit
			}
		}
		own := latencyOf(lats, c.Name, "")
		if len(own) > 0 {
			seen, timed := 0, 0
			for _, l := range own {
				seen, timed = seen+l.Seen, timed+l.Timed
			}
			r.Seen = fmt.Sprintf("%d/%d", seen, timed)
			r.P50MS = medianBy(own, func(l latency) float64 { return l.P50MS })
			r.P99MS = medianBy(own, func(l latency) float64 { return l.P99MS })
			r.AfterAckP99MS = medianBy(own, func(l latency) float64 { return l.AfterAckP99MS })
			r.LatencyPS = medianBy(own, func(l latency) float64 { return l.RatePS })
		}
		if at := latencyOf(lats, c.Name, atGoalLoad); len(at) > 0 {
			r.GoalPS = medianBy(at, func(l latency) float64 { return l.RatePS })
			r.GoalSentPS = medianBy(at, func(l latency) float64 { return l.SentPS })
			r.GoalP99MS = medianBy(at, func(l latency) float64 { return l.P99MS })
			r.GoalBusy = medianBy(at, func(l latency) float64 { return l.MachineBusy })
			r.GoalSentMin = 1
			for _, l := range at {
				if l.RatePS > 0 {
					r.GoalSentMin = min(r.GoalSentMin, l.SentPS/l.RatePS)
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// The p99 goal compares goalLoadPair at one offered load that neither
// they nor the harness saturate: --p99-share of limit-eos's median
// throughput (default 0.15). Their phases at it are marked atGoalLoad. A
// phase in which the harness sent less than goalSentShare of the offered
// rate leaves the goal unmeasured: the load was not what it says.
const (
	atGoalLoad    = "goal-load"
	goalSentShare = 0.97
)

var goalLoadPair = []string{"sidestream-w1-eos", "limit-eos"}

// latencyOf is a contender's latency phases at the rate of atRateOf's
// ("": its own).
func latencyOf(lats []latency, name, atRateOf string) []latency {
	var out []latency
	for _, l := range lats {
		if l.Contender == name && l.AtRateOf == atRateOf {
			out = append(out, l)
		}
	}
	return out
}

// medianBy is the median of one figure of xs (the upper one of an even
// count).
func medianBy[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// goals are the targets of the work on the per-record cost, each a ratio
// between two contenders of the same run (so the machine's speed and load
// cancel out as far as they can): router CPU per record against the
// exactly-once pass-through limit's, throughput against the at-least-once
// limit's, peak RSS against the limit's and Kafka Streams', p99 latency
// against the limit's (p99Goal); and records per CPU-second against Kafka
// Streams'. The CPU and Kafka Streams RSS targets are issue 37's (round
// three); the others stay from the earlier rounds.
func goals(rs []row) []goal {
	get := func(name string) (row, bool) {
		for _, r := range rs {
			if r.Name == name && r.Skipped == "" && r.RecordsPS > 0 {
				return r, true
			}
		}
		return row{}, false
	}
	var gs []goal
	// ratio adds the goal f(a)/f(b) ≤ limit (atMost) or ≥ limit; it is
	// unmeasured when a contender is missing or f(b) is 0.
	ratio := func(a, b, what string, f func(row) float64, limit float64, atMost bool) {
		ra, ok1 := get(a)
		rb, ok2 := get(b)
		v, ok := 0.0, ok1 && ok2 && f(rb) > 0
		if ok {
			v = f(ra) / f(rb)
		}
		g := goal{What: a + " " + what + " / " + b, Measured: v}
		if atMost {
			g.Want = fmt.Sprintf("≤ %.2f", limit)
		} else {
			g.Want = fmt.Sprintf("≥ %.2f", limit)
		}
		if ok {
			met := v >= limit
			if atMost {
				met = v <= limit
			}
			g.Met = &met
		}
		gs = append(gs, g)
	}
	cpu := func(r row) float64 { return r.CPUPerM }
	for _, w := range []struct {
		name string
		max  float64
	}{{"sidestream-w1-eos", 1.4}, {"sidestream-w2-eos", 3.5}, {"sidestream-w3-eos", 4.5}} {
		ratio(w.name, "limit-eos", "CPU per record", cpu, w.max, true)
	}
	ratio("sidestream-w1-eos", "limit-alo", "throughput", func(r row) float64 { return r.RecordsPS }, 0.5, false)
	rss := func(r row) float64 { return r.PeakRSSMB }
	ratio("sidestream-w1-eos", "limit-eos", "peak RSS", rss, 1, true)
	ratio("sidestream-w1-eos", "streams-w1-eos", "peak RSS", rss, 0.25, true)
	gs = append(gs, p99Goal(get))
	for _, w := range []string{"w1", "w2"} {
		ratio("sidestream-"+w+"-eos", "streams-"+w+"-eos", "records per CPU-second", func(r row) float64 { return r.PerCPUS }, 2, false)
	}
	return gs
}

// p99Goal is sidestream-w1-eos's p99 over limit-eos's, both at the p99
// goal's load (their atGoalLoad phases); with no such phases, both at one
// --latency-rate. It is unmeasured when the two were not offered the same
// load, or the harness sent less than goalSentShare of it in a phase.
func p99Goal(get func(string) (row, bool)) goal {
	g := goal{What: "sidestream-w1-eos p99 end-to-end latency / limit-eos, both at one load that saturates neither (the p99 goal's load)", Want: "≤ 1.00"}
	w, ok1 := get("sidestream-w1-eos")
	l, ok2 := get("limit-eos")
	switch {
	case !ok1 || !ok2 || w.Seen == "" || l.Seen == "":
		g.Note = "a contender or its latency phases missing"
		return g
	case w.GoalP99MS > 0 && l.GoalP99MS > 0:
		if w.GoalPS != l.GoalPS {
			g.Note = fmt.Sprintf("offered different loads: %.0f and %.0f records/s", w.GoalPS, l.GoalPS)
			return g
		}
		if sent := min(w.GoalSentMin, l.GoalSentMin); sent < goalSentShare {
			g.Note = fmt.Sprintf("the harness sent only %.0f%% of %.0f records/s in a phase: the machine was saturated", 100*sent, w.GoalPS)
			return g
		}
		g.Measured = w.GoalP99MS / l.GoalP99MS
		g.Note = fmt.Sprintf("%.0f records/s (p99 %.1f against %.1f ms; the machine %.0f%% and %.0f%% busy)", w.GoalPS, w.GoalP99MS, l.GoalP99MS, 100*w.GoalBusy, 100*l.GoalBusy)
	case w.LatencyPS == l.LatencyPS && l.P99MS > 0: // one --latency-rate for all
		g.Measured = w.P99MS / l.P99MS
		g.Note = fmt.Sprintf("%.0f records/s, --latency-rate", w.LatencyPS)
	default:
		g.Note = "no phases at one load"
		return g
	}
	met := g.Measured <= 1
	g.Met = &met
	return g
}

func describeMachine(kafka string) machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Kafka: kafka, LoadStart: loadavg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 1 {
			kb, _ := strconv.Atoi(f[1])
			m.MemGB = (kb + 512*1024) / (1024 * 1024)
		}
	}
	l, _ := strconv.ParseFloat(strings.Fields(m.LoadStart)[0], 64)
	m.SharedLoaded = l > float64(m.Cores)/2
	return m
}

func printTable(w io.Writer, rep report) {
	fmt.Fprintln(w, markdownTable(rep))
	fmt.Fprintln(w, markdownGoals(rep))
}

func markdownTable(rep report) string {
	var b strings.Builder
	b.WriteString("| contender | engine | workload | guarantee | runs | records/s | MB/s | ratio to limit-alo | CPU s per M records | records per CPU-s | peak RSS MB | p50 ms | p99 ms | p99 after the ack ms | latency records seen |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		if r.Skipped != "" {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | – | skipped: %s | | | | | | | | | |\n", r.Name, r.Engine, r.Workload, r.Guarantee, r.Skipped)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %.0f | %.1f | %.2f | %.2f | %.0f | %.0f | %.1f | %.1f | %.1f | %s |\n",
			r.Name, r.Engine, r.Workload, r.Guarantee, r.Runs, r.RecordsPS, r.MBPS, r.Ratio, r.CPUPerM, r.PerCPUS, r.PeakRSSMB, r.P50MS, r.P99MS, r.AfterAckP99MS, r.Seen)
	}
	return b.String()
}

func markdownGoals(rep report) string {
	var b strings.Builder
	b.WriteString("| goal | wanted | measured | met | conditions |\n|---|---|---|---|---|\n")
	for _, g := range rep.Goals {
		met := "not measured"
		if g.Met != nil {
			met = map[bool]string{true: "**yes**", false: "**no**"}[*g.Met]
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f | %s | %s |\n", g.What, g.Want, g.Measured, met, g.Note)
	}
	return b.String()
}

// The harness owns the part of docs/benchmarks.md between these markers.
const (
	docsBegin = "<!-- compare:begin (written by bench/compare.sh; edit the harness, not this block) -->"
	docsEnd   = "<!-- compare:end -->"
)

func writeDocs(path string, rep report, png string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(docsBegin + "\n")
	fmt.Fprintf(&b, "Latest run: %s, `%s`, %d records (%.0f bytes each on average), %d repetitions, %d latency phases of %.0f s per contender (the table: the median of their p50s and p99s; sidestream-w1-eos and limit-eos also at %.0f%% of limit-eos's throughput, the p99 goal's load).\n\n",
		rep.Time.Format("2006-01-02 15:04 UTC"), rep.Command, rep.Records, float64(rep.Bytes)/float64(max(rep.Records, 1)), rep.Reps, rep.LatencyReps, rep.LatencyS, 100*rep.P99Share)
	fmt.Fprintf(&b, "Machine: %s, %d cores, %d GB, %s, Apache Kafka %s (scripts/kafka.sh, same machine). `/proc/loadavg` at the start: `%s`, at the end: `%s`.\n\n",
		rep.Machine.CPU, rep.Machine.Cores, rep.Machine.MemGB, rep.Machine.Go, rep.Machine.Kafka, rep.Machine.LoadStart, rep.Machine.LoadEnd)
	b.WriteString(markdownTable(rep))
	b.WriteString("\n")
	b.WriteString(markdownGoals(rep))
	if png != "" {
		fmt.Fprintf(&b, "\n![throughput and latency per contender](%s)\n", relTo(filepath.Dir(path), png))
	}
	js, _ := json.MarshalIndent(struct {
		Machine machine `json:"machine"`
		Rows    []row   `json:"rows"`
		Goals   []goal  `json:"goals"`
	}{rep.Machine, rep.Rows, rep.Goals}, "", "  ")
	b.WriteString("\n<details><summary>JSON (every run: bench/results/compare.json)</summary>\n\n```json\n")
	b.Write(js)
	b.WriteString("\n```\n\n</details>\n")
	b.WriteString(docsEnd)
	s := string(old)
	i, j := strings.Index(s, docsBegin), strings.Index(s, docsEnd)
	if i >= 0 && j > i {
		s = s[:i] + b.String() + s[j+len(docsEnd):]
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n## Against the limit and the peers: `bench/compare.sh`\n\n" + b.String() + "\n"
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

func relTo(dir, path string) string {
	r, err := filepath.Rel(dir, path)
	if err != nil {
		return path
	}
	return r
}
