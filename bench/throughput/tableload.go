package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
)

// tableLoad is one measured start of a router whose topology has a
// lookup table of rows rows: a process of its own (the lookup
// contender's topology, bench/topologies/w1-lookup.yaml, on an empty
// input), timed from its start to sidestream_table_loaded = 1.
type tableLoad struct {
	Rep  int `json:"rep"`
	Rows int `json:"rows"` // rows written to the table topic
	// Seconds: process start → the table reported loaded (the
	// contender's /metrics polled every 50 ms), client start, the
	// broker's metadata and the topics' check included; LoadSeconds the
	// router's own sidestream_table_load_seconds (its topic read to the
	// end listed when the load began).
	Seconds     float64 `json:"seconds"`
	LoadSeconds float64 `json:"table_load_seconds"`
	CPUSeconds  float64 `json:"cpu_s"` // user + system of the process up to loaded
	// PeakRSSMB: VmHWM when the table reported loaded; SettledPeakRSSMB
	// 3 s later (the group joined, the table followed), RSSMB VmRSS then.
	PeakRSSMB        float64 `json:"peak_rss_mb"`
	SettledPeakRSSMB float64 `json:"settled_peak_rss_mb"`
	RSSMB            float64 `json:"rss_mb"`
	TableRows        int     `json:"table_rows"`  // sidestream_table_rows
	TableBytes       float64 `json:"table_bytes"` // sidestream_table_bytes (the router's estimate)
	// BaselinePeakRSSMB: VmHWM of the same router on plain W1 (no
	// table), 3 s after its metrics answer: what the table adds is the
	// difference.
	BaselinePeakRSSMB float64 `json:"baseline_peak_rss_mb"`
	LoadAvg           float64 `json:"loadavg_1m"`
}

// cmdTableLoad fills a compacted topic with rows rows (not timed) and
// starts the router on a topology with that table reps times, measuring
// each start to the table loaded: seconds and peak RSS
// (bench/README.md, "Feature contenders"). Against the real broker, as
// compare: bench/compare.sh tableload [flags].
func cmdTableLoad(args []string) error {
	fs := flag.NewFlagSet("tableload", flag.ExitOnError)
	brokers := fs.String("brokers", "127.0.0.1:29192", "the real broker (scripts/kafka.sh up)")
	rows := fs.Int("rows", 1_000_000, "rows of the table (keys 0 ... rows-1, ~50-byte JSON values)")
	reps := fs.Int("reps", 3, "router starts to measure on the one filled topic")
	topologies := fs.String("topologies", "bench/topologies", "directory of the workload topologies")
	ceiling := fs.Duration("wait", 5*time.Minute, "ceiling of each wait (topic leaders, the table loaded)")
	jsonOut := fs.String("json", "bench/results/tableload.jsonl", "append one JSON line per start ('' for none)")
	_ = fs.Parse(args)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logDir, err := os.MkdirTemp("", "sidestream-tableload-")
	if err != nil {
		return err
	}
	bs := strings.Split(*brokers, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs...), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, adm := context.Background(), kadm.NewClient(cl)
	stamp := strconv.FormatInt(time.Now().Unix(), 36)
	table, input := "bench-table-"+stamp, "bench-tl-in-"+stamp
	defer func() {
		_ = deleteTopics(ctx, adm, func(t string) bool { return t == table || t == input || strings.HasPrefix(t, "tl"+stamp) })
	}()
	t0 := time.Now()
	logf("filling %s: %d rows, compacted, 6 partitions (not timed)", table, *rows)
	bytes, err := fillTable(ctx, adm, cl, table, *rows, 0, *ceiling)
	if err != nil {
		return err
	}
	logf("filled in %.1f s: %.0f MB of values", time.Since(t0).Seconds(), float64(bytes)/1e6)
	if err := createTopics(ctx, adm, *ceiling, input); err != nil {
		return err
	}
	base, err := baselineRSS(ctx, adm, self, bs, input, "tl"+stamp+"-base", *topologies, logDir, *ceiling)
	if err != nil {
		return err
	}
	logf("baseline (plain W1, no table): peak RSS %.0f MB", base)
	var out []tableLoad
	for r := 1; r <= *reps; r++ {
		id := fmt.Sprintf("tl%s-%d", stamp, r)
		x, err := oneTableLoad(ctx, adm, self, bs, input, table, id, *topologies, logDir, *ceiling)
		if err != nil {
			return fmt.Errorf("rep %d: %w (logs in %s)", r, err, logDir)
		}
		x.Rep, x.Rows, x.BaselinePeakRSSMB = r, *rows, base
		if x.TableRows != *rows {
			return fmt.Errorf("rep %d: the table holds %d rows of %d (logs in %s)", r, x.TableRows, *rows, logDir)
		}
		out = append(out, x)
		logf("rep %d/%d: loaded in %.2f s (the router's load %.2f s, %.2f CPU s), peak RSS %.0f MB (settled %.0f MB, baseline %.0f MB), %d rows",
			r, *reps, x.Seconds, x.LoadSeconds, x.CPUSeconds, x.PeakRSSMB, x.SettledPeakRSSMB, base, x.TableRows)
	}
	med := func(f func(tableLoad) float64) float64 { return medianBy(out, f) }
	fmt.Printf("table load, %d rows, median of %d: %.2f s to loaded (router's load %.2f s), %.2f CPU s, peak RSS %.0f MB (settled %.0f MB; plain W1 %.0f MB)\n",
		*rows, len(out), med(func(x tableLoad) float64 { return x.Seconds }), med(func(x tableLoad) float64 { return x.LoadSeconds }),
		med(func(x tableLoad) float64 { return x.CPUSeconds }), med(func(x tableLoad) float64 { return x.PeakRSSMB }),
		med(func(x tableLoad) float64 { return x.SettledPeakRSSMB }), base)
	if err := appendTableLoads(*jsonOut, out); err != nil {
		return err
	}
	_ = os.RemoveAll(logDir)
	return nil
}

// appendTableLoads appends one JSON line per start to path (none when path is empty).
func appendTableLoads(path string, out []tableLoad) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, x := range out {
		b, _ := json.Marshal(x)
		if _, err := fmt.Fprintf(f, "%s\n", b); err != nil {
			return err
		}
	}
	return nil
}

// startRouter starts `throughput contender` on workload with its metrics
// on a free port.
func startRouter(self string, brokers []string, workload, input, id, topologies, logDir string, extra ...string) (*proc, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{"contender", "--workload", workload, "--guarantee", "eos", "--brokers", strings.Join(brokers, ","),
		"--input", input, "--prefix", id, "--group", id, "--topologies", topologies, "--listen", addr}, extra...)
	cmd := exec.Command(self, args...)
	logPath := filepath.Join(logDir, id+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, "", err
	}
	p := &proc{cmd: cmd, done: make(chan error, 1), log: logPath}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	return p, addr, nil
}

// oneTableLoad starts the lookup topology's router and waits for its
// table.
func oneTableLoad(ctx context.Context, adm *kadm.Client, self string, brokers []string, input, table, id, topologies, logDir string, ceiling time.Duration) (tableLoad, error) {
	var res tableLoad
	if err := createTopics(ctx, adm, ceiling, outputs(id, outputSuffixes)...); err != nil {
		return res, err
	}
	begin := time.Now()
	p, addr, err := startRouter(self, brokers, "w1-lookup", input, id, topologies, logDir, "--table-topic", table)
	if err != nil {
		return res, err
	}
	defer func() { _ = p.stop() }()
	pid := strconv.Itoa(p.cmd.Process.Pid)
	tl := `table="` + tableName + `"`
	var text string
	err = waitUntil(ctx, ceiling, 50*time.Millisecond, "the table loaded (sidestream_table_loaded 1)", func() (bool, string) {
		select {
		case err := <-p.done:
			p.done <- err
			return false, fmt.Sprintf("the router exited: %v\n%s", err, p.tail())
		default:
		}
		t, err := scrape(ctx, addr)
		if err != nil {
			return false, err.Error()
		}
		if metricValue(t, metrics.NameTableLoaded, tl) < 1 {
			return false, fmt.Sprintf("%.0f rows", metricValue(t, metrics.NameTableRows, tl))
		}
		text = t
		return true, ""
	})
	if err != nil {
		return res, fmt.Errorf("%w\n%s", err, p.tail())
	}
	res.Seconds = time.Since(begin).Seconds()
	res.CPUSeconds, res.PeakRSSMB = cpuSeconds(pid), peakRSS(pid)
	res.LoadSeconds = metricValue(text, metrics.NameTableLoadSeconds, tl)
	if res.LoadSeconds == 0 {
		// One scrape gathers the families one after another: the load's
		// seconds may have been gathered just before they were set, the
		// loaded flag just after. Ask once more.
		if t, err := scrape(ctx, addr); err == nil {
			res.LoadSeconds = metricValue(t, metrics.NameTableLoadSeconds, tl)
		}
	}
	res.TableRows = int(metricValue(text, metrics.NameTableRows, tl))
	res.TableBytes = metricValue(text, metrics.NameTableBytes, tl)
	res.LoadAvg, _ = strconv.ParseFloat(strings.Fields(loadavg())[0], 64)
	time.Sleep(3 * time.Second)
	res.SettledPeakRSSMB, res.RSSMB = peakRSS(pid), statusMB(pid, "VmRSS:")
	return res, nil
}

// baselineRSS is the peak RSS of the same router on plain W1, 3 s after
// its metrics answer.
func baselineRSS(ctx context.Context, adm *kadm.Client, self string, brokers []string, input, id, topologies, logDir string, ceiling time.Duration) (float64, error) {
	if err := createTopics(ctx, adm, ceiling, outputs(id, outputSuffixes)...); err != nil {
		return 0, err
	}
	p, addr, err := startRouter(self, brokers, "w1", input, id, topologies, logDir)
	if err != nil {
		return 0, err
	}
	defer func() { _ = p.stop() }()
	err = waitUntil(ctx, ceiling, 50*time.Millisecond, "the plain router's metrics", func() (bool, string) {
		_, err := scrape(ctx, addr)
		return err == nil, fmt.Sprint(err)
	})
	if err != nil {
		return 0, fmt.Errorf("%w\n%s", err, p.tail())
	}
	time.Sleep(3 * time.Second)
	return peakRSS(strconv.Itoa(p.cmd.Process.Pid)), nil
}

// statusMB is a kB line of /proc/<pid>/status, in MB.
func statusMB(pid, field string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
