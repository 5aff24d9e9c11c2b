package itest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The Connect tier (scripts/connect.sh up): a Kafka Connect worker with
// Debezium's JDBC sink, and MariaDB. Without them TestConnectMySQL skips;
// scripts/test.sh always sets both.
const (
	envConnect = "SIDESTREAM_IT_CONNECT" // http://127.0.0.1:18083
	envMySQL   = "SIDESTREAM_IT_MYSQL"   // 127.0.0.1:13306
)

// connectRegion is one group key of the connect scenario.
var connectRegions = []string{"eu", "us", "asia"}

const (
	cwSize  = int64(10_000)
	cwGrace = int64(30_000)
	cwT0    = int64(1_700_000_000_000) // a multiple of cwSize
)

// cwOrder is one input record of the connect scenario.
type cwOrder struct {
	Region string `json:"region"`
	TS     int64  `json:"ts"`
	Amount int    `json:"amount"`
	ID     string `json:"id"`
}

// cwRow is one expected (or read) row of the sink table.
type cwRow struct {
	key      string
	start    int64
	end      int64
	n        int64
	total    float64
	revision int64
	final    bool
}

// TestConnectMySQL is the hand-off to MySQL for real: the router
// aggregates orders into a connect-json window route while it is killed
// with SIGKILL, late records update closed windows within grace and later
// ones go to the late route; Debezium's JDBC sink, configured by
// deploy/connect/mysql-sink.properties as shipped, upserts the results
// into MariaDB. The table must equal the oracle's final results exactly.
// The window uses watermark: max (the task's largest event time), which
// the oracle below models: three regions cannot reach all six input
// partitions, and aligned watermarks would wait for the empty ones
// (windows_test.go covers aligned watermarks).
func TestConnectMySQL(t *testing.T) {
	brokers := os.Getenv(envBrokers)
	connectURL, mysqlAddr := os.Getenv(envConnect), os.Getenv(envMySQL)
	if brokers == "" || connectURL == "" || mysqlAddr == "" {
		t.Skipf("%s, %s and %s must be set (scripts/kafka.sh up; scripts/connect.sh up)", envBrokers, envConnect, envMySQL)
	}
	prefix := "itconn_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	s := &scenario{
		t: t, name: "connect", app: prefix, input: prefix + "_orders", dir: t.TempDir(),
		brokers: strings.Split(brokers, ","), rng: rand.New(rand.NewPCG(1, 2)),
		want: map[string]int{}, started: time.Now(),
	}
	results, late, dirty := prefix+"_revenue", prefix+"_late", prefix+"_dirty"
	s.config = filepath.Join(s.dir, "topology.yaml")
	topo := fmt.Sprintf(`application_id: %s
inputs:
  - topic: %s
event_time:
  field: ts
  format: epoch_ms
routing:
  default: revenue
routes:
  - name: revenue
    topic: %s
    format: connect-json
    window:
      type: tumbling
      size: 10s
      grace: 30s
      emit: update
      watermark: max
      group_by: string(region)
      late_topic: %s
      aggregates:
        - {name: n, fn: count}
        - {name: total, fn: sum, of: amount}
        - {name: last_id, fn: last, of: string(id)}
dirty:
  topic: %s
`, s.app, s.input, results, late, dirty)
	if err := os.WriteFile(s.config, []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	s.outputs = []string{dirty, late, results}
	s.connect()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = s.adm.DeleteTopics(ctx, prefix+"-revenue-repartition", prefix+"-revenue-changelog", prefix+"_dlq")
	})

	// The input: per region, one order every 1.5 s of event time over
	// 150 s (15 windows), every 7th sent twice (a duplicate counts: the
	// router aggregates what it is given); then late orders within grace
	// for closed windows; then orders past grace (late route); then one
	// far-future order per region that closes every window.
	var phaseA, phaseLate, phaseTooLate, phaseFlush []cwOrder
	seq := 0
	next := func(region string, ts int64) cwOrder {
		seq++
		return cwOrder{Region: region, TS: ts, Amount: seq%17 + 1, ID: fmt.Sprintf("o-%d", seq)}
	}
	for i := 0; i < 100; i++ {
		for _, r := range connectRegions {
			o := next(r, cwT0+int64(i)*1500)
			phaseA = append(phaseA, o)
			if seq%7 == 0 {
				phaseA = append(phaseA, o)
			}
		}
	}
	for _, r := range connectRegions {
		// The global max is cwT0+148.5 s: 125..128 s are < grace late for
		// every task (their windows closed at 130 s, purge at 160 s).
		for _, off := range []int64{125_000, 126_500, 128_000} {
			phaseLate = append(phaseLate, next(r, cwT0+off))
		}
		// Past grace for the region's own task: its watermark is at
		// least cwT0+148.5 s > 10 s + 30 s.
		phaseTooLate = append(phaseTooLate, next(r, cwT0+5_000))
		phaseFlush = append(phaseFlush, next(r, cwT0+10_000_000))
	}
	want := cwOracle(append(append([]cwOrder{}, phaseA...), phaseLate...))

	produce := func(batch []cwOrder) {
		t.Helper()
		recs := make([]*kgo.Record, len(batch))
		for i, o := range batch {
			v, _ := json.Marshal(o)
			recs[i] = &kgo.Record{Topic: s.input, Key: []byte(o.Region), Value: v}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produced := int64(0)
	waitLag0 := func(r *router) {
		t.Helper()
		waitFor(t, 3*time.Minute, "input lag 0", func() (bool, string) {
			_, sum := s.committed()
			if sum == produced {
				return true, ""
			}
			requireRunning(t, r)
			return false, fmt.Sprintf("committed %d of %d", sum, produced)
		})
	}

	r := s.startRouter("a")
	r.waitReady(60 * time.Second)

	// The sink, from the shipped file: only ${env:...} references are
	// filled in (hosts, ports, topics, user), nothing else changes.
	connector := submitConnector(t, connectURL, "../deploy/connect/mysql-sink.properties", map[string]string{
		"SIDESTREAM_CONNECT_MYSQL_TOPICS":       results,
		"SIDESTREAM_CONNECT_MYSQL_URL":          "jdbc:mariadb://" + mysqlAddr + "/sidestream",
		"SIDESTREAM_CONNECT_MYSQL_USER":         "sidestream",
		"SIDESTREAM_CONNECT_MYSQL_PASSWORD":     "sidestream",
		"SIDESTREAM_CONNECT_MYSQL_DLQ":          prefix + "_dlq",
		"SIDESTREAM_CONNECT_REPLICATION_FACTOR": "1",
	})
	t.Cleanup(func() { deleteConnector(t, connectURL, connector) })

	half := len(phaseA) / 2
	produce(phaseA[:half])
	produced += int64(half)
	// Soon after the first commit, the rest is likely in an open
	// transaction (polled often, to kill while it is).
	waitEvery(t, 50*time.Millisecond, 2*time.Minute, "a first commit", func() (bool, string) {
		_, sum := s.committed()
		requireRunning(t, r)
		return sum > 0, fmt.Sprintf("committed %d", sum)
	})
	r.kill9() // mid-stream: an open transaction is lost and replayed
	r = r.restart()
	produce(phaseA[half:])
	produced += int64(len(phaseA) - half)
	waitLag0(r)
	produce(phaseLate)
	produced += int64(len(phaseLate))
	produce(phaseTooLate)
	produced += int64(len(phaseTooLate))
	waitLag0(r)
	produce(phaseFlush)
	produced += int64(len(phaseFlush))
	waitLag0(r)

	table := strings.ToLower(results)
	var got map[string]cwRow
	waitEvery(t, time.Second, 3*time.Minute, "table "+table+" equal to the expected results", func() (bool, string) {
		var err error
		got, err = readTable(mysqlAddr, table)
		if err == nil && equalRows(got, want) {
			return true, ""
		}
		status, _ := httpGet(connectURL + "/connectors/" + connector + "/status")
		return false, fmt.Sprintf("err %v\n%s\nconnector status: %s", err, diffRows(got, want), status)
	})
	// Late updates were applied to their rows (revision > 1), every
	// window was closed (final), and the key is the window's natural ID.
	lateWins := map[string]bool{}
	for _, o := range phaseLate {
		lateWins[fmt.Sprintf("%s@%d", o.Region, o.TS/cwSize*cwSize)] = true
	}
	for id, row := range got {
		if lateWins[id] && row.revision < 2 {
			t.Errorf("row %s: revision %d, want a late update (>= 2)", id, row.revision)
		}
		if !row.final {
			t.Errorf("row %s is not final", id)
		}
	}
	if len(lateWins) != len(connectRegions) {
		t.Fatalf("late orders hit %d windows, want one per region", len(lateWins))
	}
	dups, err := mysqlQuery(mysqlAddr, fmt.Sprintf("SELECT COUNT(*) - COUNT(DISTINCT `group_key`, `window_start`) FROM `%s`", table))
	if err != nil || strings.TrimSpace(dups) != "0" {
		t.Fatalf("duplicate rows: %q %v", dups, err)
	}
	// What the Elasticsearch sink would receive is the same topic: the
	// contract its _id upsert relies on holds for every record.
	checkSinkContract(t, s.readTopics([]string{results}, true, 30*time.Second), want)
	lateRecs := s.readTopics([]string{late}, true, 30*time.Second)
	if len(lateRecs) != len(phaseTooLate) {
		t.Fatalf("late route has %d records, want %d", len(lateRecs), len(phaseTooLate))
	}
	t.Logf("scenario=connect rows=%d late_updates=%d too_late=%d duplicates_in_input=%d kills=1 elapsed=%s",
		len(got), len(phaseLate), len(lateRecs), len(phaseA)-300, time.Since(s.started).Round(time.Second))
}

// checkSinkContract checks the records a key-upserting sink (JDBC by
// primary key, Elasticsearch by _id) reads: every key present, a plain
// UTF-8 string that is the window's natural ID, each key on one partition
// only (so the sink applies its updates in order), every value a
// connect-json envelope of the route's fields, and the last value per key
// the final result.
func checkSinkContract(t *testing.T, recs []*kgo.Record, want map[string]cwRow) {
	t.Helper()
	part := map[string]int32{}
	last := map[string][]byte{}
	for _, r := range recs {
		k := string(r.Key)
		if len(r.Key) == 0 || !utf8.Valid(r.Key) {
			t.Fatalf("record at %d/%d has no string key: %q", r.Partition, r.Offset, r.Key)
		}
		if _, ok := want[k]; !ok {
			t.Fatalf("key %q is not a window of the oracle", k)
		}
		if p, ok := part[k]; ok && p != r.Partition {
			t.Fatalf("key %q on partitions %d and %d: a sink could apply its updates out of order", k, p, r.Partition)
		}
		part[k] = r.Partition
		if r.Value == nil {
			t.Fatalf("tombstone for %q: tumbling windows never retract", k)
		}
		var env struct {
			Schema struct {
				Type   string `json:"type"`
				Fields []struct {
					Field string `json:"field"`
					Type  string `json:"type"`
				} `json:"fields"`
			} `json:"schema"`
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal(r.Value, &env); err != nil || env.Schema.Type != "struct" || len(env.Schema.Fields) != len(env.Payload) {
			t.Fatalf("value of %q is not a connect-json envelope (%v): %s", k, err, r.Value)
		}
		last[k] = r.Value
	}
	if len(last) != len(want) {
		t.Fatalf("the topic has %d keys, want %d", len(last), len(want))
	}
	for k, v := range last {
		var e struct {
			Payload struct {
				N     int64   `json:"n"`
				Total float64 `json:"total"`
				Final bool    `json:"final"`
			} `json:"payload"`
		}
		_ = json.Unmarshal(v, &e)
		if w := want[k]; e.Payload.N != w.n || e.Payload.Total != w.total || !e.Payload.Final {
			t.Fatalf("last record of %q is %s, want the final result %+v", k, v, w)
		}
	}
}

// cwOracle computes the final result of every window the scenario
// closes: per region and 10 s window, count, sum and the last id.
func cwOracle(orders []cwOrder) map[string]cwRow {
	out := map[string]cwRow{}
	for _, o := range orders {
		start := o.TS / cwSize * cwSize
		id := fmt.Sprintf("%s@%d", o.Region, start)
		r := out[id]
		r.key, r.start, r.end = o.Region, start, start+cwSize
		r.n++
		r.total += float64(o.Amount)
		r.final = true
		out[id] = r
	}
	return out
}

func equalRows(got, want map[string]cwRow) bool {
	if len(got) != len(want) {
		return false
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok || g.key != w.key || g.start != w.start || g.end != w.end || g.n != w.n || g.total != w.total {
			return false
		}
	}
	return true
}

func diffRows(got, want map[string]cwRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rows: got %d, want %d\n", len(got), len(want))
	ids := map[string]bool{}
	for id := range got {
		ids[id] = true
	}
	for id := range want {
		ids[id] = true
	}
	var sorted []string
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	n := 0
	for _, id := range sorted {
		g, gok := got[id]
		w, wok := want[id]
		if gok && wok && equalRows(map[string]cwRow{id: g}, map[string]cwRow{id: w}) {
			continue
		}
		if n++; n > 10 {
			b.WriteString("...\n")
			break
		}
		fmt.Fprintf(&b, "  %s: got %+v (%v), want %+v (%v)\n", id, g, gok, w, wok)
	}
	return b.String()
}

// readTable reads the sink table: id -> row.
func readTable(addr, table string) (map[string]cwRow, error) {
	out, err := mysqlQuery(addr, fmt.Sprintf("SELECT `id`, `group_key`, `window_start`, `window_end`, `n`, `total`, `revision`, `final` FROM `%s`", table))
	if err != nil {
		return nil, err
	}
	rows := map[string]cwRow{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 8 {
			return nil, fmt.Errorf("row %q: %d columns", sc.Text(), len(f))
		}
		var r cwRow
		var errs [6]error
		r.key = f[1]
		r.start, errs[0] = strconv.ParseInt(f[2], 10, 64)
		r.end, errs[1] = strconv.ParseInt(f[3], 10, 64)
		r.n, errs[2] = strconv.ParseInt(f[4], 10, 64)
		r.total, errs[3] = strconv.ParseFloat(f[5], 64)
		r.revision, errs[4] = strconv.ParseInt(f[6], 10, 64)
		r.final = f[7] == "1" || strings.EqualFold(f[7], "true")
		for _, e := range errs {
			if e != nil {
				return nil, fmt.Errorf("row %q: %v", sc.Text(), e)
			}
		}
		if _, dup := rows[f[0]]; dup {
			return nil, fmt.Errorf("id %s twice", f[0])
		}
		rows[f[0]] = r
	}
	return rows, nil
}

// mysqlQuery runs one statement with the mariadb client, tab-separated.
func mysqlQuery(addr, q string) (string, error) {
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("mariadb", "--no-defaults", "-h", host, "-P", port, "-usidestream", "-psidestream",
		"-D", "sidestream", "--batch", "--skip-column-names", "-e", q)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

var envRefRe = regexp.MustCompile(`\$\{env:([A-Za-z0-9_]+)\}`)

// loadConnectorConfig reads a deploy/connect properties file and fills its
// ${env:NAME} references from vars, the values the worker's
// EnvVarConfigProvider would give them. Every reference must be given;
// nothing else is changed.
func loadConnectorConfig(t testing.TB, path string, vars map[string]string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s:%d: not key=value", path, i+1)
		}
		var missing string
		v = envRefRe.ReplaceAllStringFunc(v, func(ref string) string {
			name := envRefRe.FindStringSubmatch(ref)[1]
			val, ok := vars[name]
			if !ok {
				missing = name
			}
			return val
		})
		if missing != "" {
			t.Fatalf("%s:%d: ${env:%s} has no value in the test", path, i+1, missing)
		}
		cfg[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return cfg
}

// submitConnector creates (or replaces) the connector of a properties
// file on the worker and waits until its task runs. It returns its name.
func submitConnector(t testing.TB, base, path string, vars map[string]string) string {
	t.Helper()
	cfg := loadConnectorConfig(t, path, vars)
	name := cfg["name"]
	body, _ := json.Marshal(cfg)
	req, _ := http.NewRequest(http.MethodPut, base+"/connectors/"+name+"/config", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := connectHTTP.Do(req)
	if err != nil {
		t.Fatalf("submit connector %s: %v", name, err)
	}
	rb := new(bytes.Buffer)
	_, _ = rb.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("submit connector %s: %s: %s", name, resp.Status, rb)
	}
	waitEvery(t, 500*time.Millisecond, 3*time.Minute, "connector "+name+" task RUNNING", func() (bool, string) {
		st, _ := httpGet(base + "/connectors/" + name + "/status")
		if strings.Contains(st, `"FAILED"`) {
			t.Fatalf("connector %s failed: %s", name, st)
		}
		return strings.Contains(st, `"tasks":[{"id":0,"state":"RUNNING"`), st
	})
	return name
}

func deleteConnector(t testing.TB, base, name string) {
	req, _ := http.NewRequest(http.MethodDelete, base+"/connectors/"+name, nil)
	if resp, err := connectHTTP.Do(req); err == nil {
		resp.Body.Close()
	}
}

// connectHTTP talks to the worker's REST API: creating a connector can
// take a while, and no connection outlives a request (goleak).
var connectHTTP = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func httpGet(url string) (string, error) {
	resp, err := httpc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b := new(bytes.Buffer)
	_, err = b.ReadFrom(resp.Body)
	return b.String(), err
}
