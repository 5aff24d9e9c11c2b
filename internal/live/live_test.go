package live

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

func load(t *testing.T, path string) *plan.Plan {
	t.Helper()
	top, err := plan.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func TestSamplesBoundedAndSafe(t *testing.T) {
	top := load(t, "../../examples/late-orders.yaml")
	s := New(top, metrics.New(), Options{Samples: 5})
	var recs []*kgo.Record
	for i := range 12 {
		recs = append(recs, &kgo.Record{Topic: "orders.dirty", Offset: int64(i), Key: []byte("k\x1b" + strconv.Itoa(i)),
			Value: []byte{0xff, byte(i)},
			Headers: []kgo.RecordHeader{
				{Key: wire.HeaderReason, Value: []byte("invalid_utf8")},
				{Key: wire.HeaderStage, Value: []byte("decode")},
				{Key: wire.HeaderError, Value: []byte("bad \x07 byte <script>")},
			}})
	}
	recs = append(recs,
		&kgo.Record{Topic: "orders.late", Value: []byte(`{"ts":1}`), Headers: []kgo.RecordHeader{
			{Key: wire.HeaderLateRoute, Value: []byte("revenue")},
			{Key: wire.HeaderLateBy, Value: []byte("61000")},
			{Key: wire.HeaderLateWins, Value: []byte("[0,60000)")},
		}},
		&kgo.Record{Topic: "orders.clean", Value: []byte("{}")}, // not a side route: ignored
	)
	s.Sample(recs)
	v := s.View()
	d := v.Samples["dirty"]
	if len(d) != 5 || d[4].Offset != 11 || d[0].Offset != 7 {
		t.Fatalf("dirty ring: %d samples, last %+v", len(d), d[len(d)-1])
	}
	if d[4].Key != `k\x1b11` || d[4].Value.Kind != "binary" || d[4].Value.Text != "ff0b" || d[4].Reason != "invalid_utf8" {
		t.Fatalf("sample not rendered safely: %+v", d[4])
	}
	b, _ := json.Marshal(v)
	if strings.Contains(string(b), "\\u001b") || strings.Contains(string(b), "\\u0007") {
		t.Fatalf("a control character reached the view: %s", b)
	}
	l := v.Samples["late"]
	if len(l) != 1 || l[0].Reason != "late" || !strings.Contains(strings.Join(l[0].Lines, ";"), "late: window route revenue, 1m1s behind the watermark") {
		t.Fatalf("late sample: %+v", l)
	}
	var names []string
	for _, r := range v.Routes {
		names = append(names, r.Name+"="+r.Counter)
	}
	if got := strings.Join(names, " "); got != "orders=written/orders.clean revenue=written/orders.revenue-per-minute dirty=written/orders.dirty revenue.late=written/orders.late" {
		t.Fatalf("routes: %s", got)
	}
}

func TestCountersAndRates(t *testing.T) {
	top := load(t, "../../examples/logs-by-level.yaml")
	m := metrics.New()
	s := New(top, m, Options{Tasks: func() []Task {
		wm := time.Now().Add(-3 * time.Second).UnixMilli()
		return []Task{{Status: taskStatus{Topic: "logs", Partition: 2, Watermark: &wm}, Watermark: &wm}}
	}})
	tl := metrics.NewTally()
	tl.Consumed["logs"] = 10
	tl.Routes["main"] = 7
	tl.AddWritten("main", "logs.main", 7)
	tl.AddWritten("dirty", "logs.dirty", 3)
	tl.Dirty[[2]string{"schema", "schema_violation"}] = 3
	tl.Redriven["logs"] = 2
	m.Observe(tl)
	v := s.View()
	for k, want := range map[string]float64{"consumed/logs": 10, "route/main": 7, "route/error": 0, "written/logs.main": 7, "written/logs.error": 0, "written/logs.dirty": 3, "dirty": 3, "dirty_stage/schema": 3, "dirty_reason/schema_violation": 3, "redriven/logs": 2} {
		if v.Counters[k] != want {
			t.Errorf("counter %s = %v, want %v", k, v.Counters[k], want)
		}
	}
	if len(v.Tasks) != 1 || v.Tasks[0].WatermarkLagMs == nil || *v.Tasks[0].WatermarkLagMs < 2900 {
		t.Fatalf("tasks: %+v", v.Tasks)
	}
	m.Observe(tl)
	s.mu.Lock()
	s.tickAt = s.tickAt.Add(-2 * time.Second) // as if two seconds passed
	s.mu.Unlock()
	v = s.View()
	if r := v.Rates["route/main"]; r < 3 || r > 3.6 {
		t.Fatalf("rate of main = %v, want about 7 per 2 s", r)
	}
}

// TestIncompleteSamples: an assembly route's incomplete records are
// sampled with the parts they miss, and its side routes count what was
// written to their topics.
func TestIncompleteSamples(t *testing.T) {
	top := load(t, "../../examples/assemble-orders.yaml")
	m := metrics.New()
	m.Assemblies.WithLabelValues("assembled", metrics.ResultExpired).Add(3)
	m.AssemblyParts.WithLabelValues("assembled", metrics.PartCompleted).Add(2)
	m.RouteWritten.WithLabelValues("assembled", "orders.incomplete").Add(4) // 3 expired, 1 evicted
	m.RouteWritten.WithLabelValues("assembled", "orders.duplicate").Add(2)
	m.RouteWritten.WithLabelValues("assembled", "orders.assembled").Add(5)
	m.RouteIn.WithLabelValues("assembled").Add(17) // parts, not assemblies
	s := New(top, m, Options{})
	s.Sample([]*kgo.Record{
		{Topic: "orders.incomplete", Key: []byte("o-9"), Value: []byte(`{"id":"o-9","parts":{"lines":{"total":3}}}`), Headers: []kgo.RecordHeader{
			{Key: wire.HeaderAssemblyRoute, Value: []byte("assembled")},
			{Key: wire.HeaderAssemblyParts, Value: []byte("lines")},
			{Key: wire.HeaderMissing, Value: []byte("customer")},
		}},
		{Topic: "orders.duplicate", Value: []byte("{}")}, // counted, not sampled
	})
	v := s.View()
	inc := v.Samples["incomplete"]
	if len(inc) != 1 || inc[0].Reason != "incomplete" || !strings.Contains(strings.Join(inc[0].Lines, ";"), "timed out missing customer; held lines") {
		t.Fatalf("incomplete sample: %+v", inc)
	}
	counters := map[string]string{}
	for _, r := range v.Routes {
		counters[r.Name] = r.Counter
	}
	if counters["assembled.incomplete"] != "written/orders.incomplete" || counters["assembled.duplicate"] != "written/orders.duplicate" || counters["assembled"] != "written/orders.assembled" {
		t.Fatalf("side route counters: %v", counters)
	}
	for k, want := range map[string]float64{"written/orders.incomplete": 4, "written/orders.duplicate": 2, "written/orders.assembled": 5, "route/assembled": 17} {
		if v.Counters[k] != want {
			t.Errorf("counter %s = %v, want %v", k, v.Counters[k], want)
		}
	}
}

// taskStatus stands for the processor's task status: a JSON object.
type taskStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Watermark *int64 `json:"watermark,omitempty"`
}

// TestTaskViewJSON: a task view marshals as a struct embedding the status
// with watermark_lag_ms after it, byte for byte, as the web view reads it.
func TestTaskViewJSON(t *testing.T) {
	wm, lag := int64(1000), int64(250)
	type embedded struct {
		taskStatus
		WatermarkLagMs *int64 `json:"watermark_lag_ms,omitempty"`
	}
	for _, c := range []struct {
		name string
		st   taskStatus
		lag  *int64
	}{
		{"with lag", taskStatus{Topic: "logs", Partition: 2, Watermark: &wm}, &lag},
		{"no lag", taskStatus{Topic: "logs", Partition: 0}, nil},
		{"empty status", taskStatus{}, &lag},
	} {
		want, err := json.Marshal(embedded{c.st, c.lag})
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(TaskView{Task: Task{Status: c.st, Watermark: c.st.Watermark}, WatermarkLagMs: c.lag})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: %s, want %s", c.name, got, want)
		}
	}
	got, err := json.Marshal(TaskView{Task: Task{Status: struct{}{}}, WatermarkLagMs: &lag})
	if err != nil || string(got) != `{"watermark_lag_ms":250}` {
		t.Errorf("status without fields: %s, %v", got, err)
	}
	if _, err := json.Marshal(TaskView{Task: Task{Status: []int{1}}}); err == nil {
		t.Error("a status that is not a JSON object marshalled")
	}
}
