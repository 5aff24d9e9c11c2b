package audit

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rec is one record produced to the audited topic: a nil value is a
// tombstone.
type rec struct {
	key   string
	value *string
}

func val(s string) *string { return &s }

// world is a topic on kfake and what its sinks should hold, built from
// the same records: the latest value per key, tombstones deleted.
type world struct {
	brokers []string
	topic   string
	es      map[string]string
	rows    [][]driver.Value
}

func newWorld(t *testing.T, recs []rec) *world {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	latest := map[string]*string{}
	for _, r := range recs {
		kr := &kgo.Record{Topic: "out", Key: []byte(r.key)}
		if r.value != nil {
			kr.Value = []byte(*r.value)
		}
		if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
		latest[r.key] = r.value
	}
	w := &world{brokers: c.ListenAddrs(), topic: "out", es: map[string]string{}}
	keys := make([]string, 0, len(latest))
	for k, v := range latest {
		if v != nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		payload := *latest[k]
		var env struct {
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal([]byte(payload), &env) == nil && env.Payload != nil {
			payload = string(env.Payload)
		}
		w.es[k] = payload
		var m map[string]any
		_ = json.Unmarshal([]byte(payload), &m)
		// MySQL's text protocol: numbers and booleans as digits.
		n := fmt.Sprint(m["n"])
		if b, ok := m["ok"].(bool); ok {
			n2 := "0"
			if b {
				n2 = "1"
			}
			w.rows = append(w.rows, []driver.Value{[]byte(k), []byte(n), []byte(fmt.Sprint(m["name"])), []byte(n2)})
		} else {
			w.rows = append(w.rows, []driver.Value{[]byte(k), []byte(n), []byte(fmt.Sprint(m["name"])), nil})
		}
	}
	return w
}

func (w *world) table() *fakeTable {
	return &fakeTable{cols: []string{"id", "n", "name", "ok"}, types: []string{"VARCHAR", "DOUBLE", "TEXT", "TINYINT"}, rows: w.rows}
}

func (w *world) run(t *testing.T, es string, tb *fakeTable, samples int) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{
		Brokers: w.brokers, Topic: w.topic, Dir: t.TempDir(), Samples: samples,
		Elasticsearch: &ESTarget{URL: es, Index: "idx"},
		MySQL:         &MySQLTarget{DB: openFakeMySQL(t, t.Name(), tb), Table: "out", KeyColumn: "id"},
	})
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	return rep
}

// keyedRecords: connect-json and plain JSON values, updates, a tombstone
// of a key written before and one re-created after its tombstone, a
// number written as 2.50 whose sinks hold 2.5, a boolean MySQL holds as 1.
func keyedRecords() []rec {
	env := func(n string, name string, ok bool) *string {
		return val(fmt.Sprintf(`{"schema":{"type":"struct","fields":[]},"payload":{"n":%s,"name":%q,"ok":%v}}`, n, name, ok))
	}
	recs := []rec{
		{"a", env("1", "first", true)},
		{"b", env("2", "bee", false)},
		{"a", env("2.50", "first again", true)},
		{"c", val(`{"n":3,"name":"sea"}`)},
		{"d", env("4", "dee", true)},
		{"d", nil},
		{"e", env("5", "gone", true)},
		{"e", nil},
		{"e", env("6", "back", false)},
	}
	for i := range 2500 { // more than a page of the Elasticsearch scan
		recs = append(recs, rec{fmt.Sprintf("k%05d", i), val(fmt.Sprintf(`{"n":%d,"name":"x"}`, i))})
	}
	return recs
}

func TestAuditConsistentSinksReportNothing(t *testing.T) {
	w := newWorld(t, keyedRecords())
	es, srv := newFakeES(t, "idx", w.es)
	tb := w.table()
	rep := w.run(t, srv.URL, tb, 0)
	if rep.Drifted() {
		var b bytes.Buffer
		_ = rep.WriteText(&b)
		t.Fatalf("drift reported for consistent sinks:\n%s", b.String())
	}
	if rep.Keys != 2504 || rep.Tombstones != 1 || rep.Records != 2509 {
		t.Fatalf("topic counted %d keys, %d tombstones, %d records; want 2504, 1, 2509", rep.Keys, rep.Tombstones, rep.Records)
	}
	for _, s := range rep.Sinks {
		if s.Same != 2504 || s.Read != 2504 {
			t.Fatalf("%s: %d same of %d read, want 2504", s.Sink, s.Same, s.Read)
		}
	}
	if es.searches < 3 {
		t.Fatalf("elasticsearch was read in %d searches: the scan did not page", es.searches)
	}
	if !strings.Contains(tb.query, "ORDER BY CAST(`id` AS BINARY)") {
		t.Fatalf("mysql query %q does not order by the key's bytes", tb.query)
	}
}

func TestAuditFindsPlantedDrift(t *testing.T) {
	w := newWorld(t, keyedRecords())
	// Elasticsearch: a document deleted by hand, one a tombstone should
	// have deleted, one changed.
	delete(w.es, "k00007")
	w.es["d"] = `{"n":4,"name":"dee","ok":true}`
	w.es["c"] = `{"n":3,"name":"SEA"}`
	_, srv := newFakeES(t, "idx", w.es)
	// MySQL: a row changed by hand (n), one missing, one extra at the end.
	tb := w.table()
	var rows [][]driver.Value
	for _, r := range tb.rows {
		switch string(r[0].([]byte)) {
		case "b":
			r = []driver.Value{r[0], []byte("99"), r[2], r[3]}
		case "k01000":
			continue
		}
		rows = append(rows, r)
	}
	tb.rows = append(rows, []driver.Value{[]byte("zz"), []byte("1"), []byte("x"), nil})
	rep := w.run(t, srv.URL, tb, 0)
	if !rep.Drifted() {
		t.Fatal("no drift reported")
	}
	got := map[string]SinkReport{}
	for _, s := range rep.Sinks {
		got[s.Sink] = s
	}
	check := func(sink, kind string, d Drift, keys ...string) {
		t.Helper()
		if d.Count != int64(len(keys)) || !reflect.DeepEqual(d.Keys, keys) {
			t.Errorf("%s %s: %d %v, want %v", sink, kind, d.Count, d.Keys, keys)
		}
	}
	es, my := got["elasticsearch"], got["mysql"]
	check("elasticsearch", "missing", es.Missing, "k00007")
	check("elasticsearch", "extra", es.Extra, "d")
	check("elasticsearch", "different", es.Different, "c")
	check("mysql", "missing", my.Missing, "k01000")
	check("mysql", "extra", my.Extra, "zz")
	check("mysql", "different", my.Different, "b")
	if f := my.Different.Fields["b"]; !reflect.DeepEqual(f, []string{"n"}) {
		t.Errorf("mysql b differs in %v, want [n]", f)
	}
	var text, js bytes.Buffer
	_ = rep.WriteText(&text)
	for _, want := range []string{"elasticsearch idx: DRIFT", `missing "k00007"`, `different "b" (fields n)`, "mysql out: DRIFT"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	_ = rep.WriteJSON(&js)
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Sinks[1].Extra.Keys[0] != "zz" {
		t.Errorf("json report does not read back (%v): %s", err, js.String())
	}
}

// TestAuditSamplesBounded: the counts are complete, the listed keys
// bounded (a sink missing everything must not fill memory with keys).
func TestAuditSamplesBounded(t *testing.T) {
	w := newWorld(t, keyedRecords())
	_, srv := newFakeES(t, "idx", map[string]string{})
	rep := w.run(t, srv.URL, w.table(), 5)
	es := rep.Sinks[0]
	if es.Missing.Count != 2504 || len(es.Missing.Keys) != 5 {
		t.Fatalf("missing: count %d, %d keys listed; want 2504 and 5", es.Missing.Count, len(es.Missing.Keys))
	}
}

// TestAuditRefusesUnorderedSink: a sink whose keys come out of byte
// order (a case-folding collation) is an error, not a drift report.
func TestAuditRefusesUnorderedSink(t *testing.T) {
	w := newWorld(t, []rec{{"B", val(`{"n":1}`)}, {"a", val(`{"n":2}`)}})
	_, srv := newFakeES(t, "idx", w.es)
	tb := &fakeTable{cols: []string{"id", "n"}, types: []string{"VARCHAR", "INT"},
		rows: [][]driver.Value{{[]byte("a"), []byte("2")}, {[]byte("B"), []byte("1")}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Run(ctx, Options{Brokers: w.brokers, Topic: w.topic, Dir: t.TempDir(),
		Elasticsearch: &ESTarget{URL: srv.URL, Index: "idx"},
		MySQL:         &MySQLTarget{DB: openFakeMySQL(t, t.Name(), tb), Table: "out"}})
	if err == nil || !strings.Contains(err.Error(), "byte order") {
		t.Fatalf("err = %v, want a byte-order error", err)
	}
}

func TestDocFromJSONCanonical(t *testing.T) {
	a, err := docFromJSON([]byte(`{"schema":{"type":"struct"},"payload":{"x":1.50,"b":true,"s":"t","z":null,"o":{"q":1,"p":[2]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := docFromJSON([]byte(`{"x":1.5,"b":1,"s":"t","o":{"p":[2],"q":1}}`))
	if d := diffFields(a, b); len(d) != 0 {
		t.Fatalf("equal values differ in %v: %v vs %v", d, a, b)
	}
	c, _ := docFromJSON([]byte(`{"x":"1.5","b":1,"s":"t","o":{"p":[2],"q":1},"extra":0}`))
	if d := diffFields(a, c); !reflect.DeepEqual(d, []string{"extra", "x"}) {
		t.Fatalf("diff = %v, want [extra x] (a string is not a number)", d)
	}
	if _, err := docFromJSON([]byte(`[1]`)); err == nil {
		t.Fatal("an array was taken as a document")
	}
}

// TestAuditUnknownTopicFailsAtOnce: a misspelt topic is an error at once,
// not a wait for its end offsets until the timeout.
func TestAuditUnknownTopicFailsAtOnce(t *testing.T) {
	w := newWorld(t, []rec{{"a", val(`{"n":1}`)}})
	_, srv := newFakeES(t, "idx", w.es)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, Options{Brokers: w.brokers, Topic: "no-such-topic", Dir: t.TempDir(),
		Elasticsearch: &ESTarget{URL: srv.URL, Index: "idx"}})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v, want: topic does not exist", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %s to say so", d)
	}
}
