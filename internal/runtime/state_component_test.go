package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/api"
)

func stateHandler(p *Processor) http.Handler {
	rs := map[string]api.StateReader{}
	for name, r := range p.StateReaders() {
		rs[name] = r
	}
	return api.Handler(api.Config{State: rs})
}

func getState(t *testing.T, h http.Handler, path string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("GET %s: %d, body %q is not a JSON object: %v", path, rec.Code, rec.Body, err)
	}
	return rec.Code, body
}

// TestStateQuery runs two instances of a window topology and asks each
// for the open windows of every group key: exactly one instance answers
// with the key's windows (their exact aggregates), the other answers 404
// naming the owner; an unknown route is 404 and a missing key 400.
func TestStateQuery(t *testing.T) {
	c := newCluster(t)
	top := windowTopology(t, c.ListenAddrs())
	peers := WithOwnerURL("http://{instance}.peers:8080/")
	a := start(t, top, "a", peers)
	b := start(t, top, "b", peers)
	rep := top.Routes[0].Window.RepartitionTopic
	owned := func(p *Processor) int {
		n := 0
		for _, ts := range p.Tasks() {
			if ts.Topic == rep {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(time.Minute); owned(a.p)+owned(b.p) != 6 || owned(a.p) == 0 || owned(b.p) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the two instances do not share the repartition topic: a %v b %v", a.p.Tasks(), b.p.Tasks())
		}
	}

	// 20 services, service i gets i+1 ERROR records in the window
	// [1_000_000, 1_010_000) with latencies 1..i+1, and one more record in
	// the next window. Every task's watermark ends in [1_010_000,
	// 1_010_019]: the first window has fired once (revision 1) and is kept
	// for its 1 s grace, the second has not fired (revision 0).
	const base = 1_000_000
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	keys := 20
	want := 0
	for i := range keys {
		svc := fmt.Sprintf("svc-%02d", i)
		for j := range i + 1 {
			v := fmt.Sprintf(`{"id":"%s-%d","ts":%d,"level":"ERROR","service":%q,"latency_ms":%d}`, svc, j, base+1000+j, svc, j+1)
			cl.Produce(context.Background(), &kgo.Record{Key: []byte(svc), Value: []byte(v)}, nil)
			want++
		}
	}
	for i := range keys { // after every record of the first window
		svc := fmt.Sprintf("svc-%02d", i)
		v := fmt.Sprintf(`{"id":"%s-next","ts":%d,"level":"ERROR","service":%q,"latency_ms":7}`, svc, base+10_000+i, svc)
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(svc), Value: []byte(v)}, nil)
		want++
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// With aligned watermarks a window fires when the marks sent at stage
	// one's commit have reached every task, which may come after the last
	// record is aggregated: wait for both.
	fired := func() bool {
		n := 0
		for _, p := range []*Processor{a.p, b.p} {
			for _, ts := range p.Tasks() {
				if ts.Topic != rep {
					continue
				}
				if ts.Watermark == nil || *ts.Watermark < base+10_000 {
					return false
				}
				n++
			}
		}
		return n == 6
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if a.p.Metrics().Snapshot().Aggregated+b.p.Metrics().Snapshot().Aggregated >= float64(want) && fired() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stage two aggregated %v + %v of %d; tasks a %+v b %+v", a.p.Metrics().Snapshot().Aggregated, b.p.Metrics().Snapshot().Aggregated, want, a.p.Tasks(), b.p.Tasks())
		}
	}

	hs := map[string]http.Handler{"a": stateHandler(a.p), "b": stateHandler(b.p)}
	answered := map[string]int{}
	for i := range keys {
		svc := fmt.Sprintf("svc-%02d", i)
		path := "/state/errors?key=" + url.QueryEscape(svc)
		var holder string
		bodies := map[string]map[string]any{}
		for _, id := range []string{"a", "b"} {
			code, body := getState(t, hs[id], path)
			bodies[id] = body
			switch code {
			case 200:
				if holder != "" {
					t.Fatalf("%s: both instances answer", svc)
				}
				holder = id
			case 404:
			default:
				t.Fatalf("%s on %s: %d %v", svc, id, code, body)
			}
		}
		if holder == "" {
			t.Fatalf("%s: no instance answers: %v", svc, bodies)
		}
		answered[holder]++
		other := map[string]string{"a": "b", "b": "a"}[holder]
		nf := bodies[other]
		owner, _ := nf["owner"].(map[string]any)
		if owner == nil || owner["client_id"] != holder || owner["member_id"] == "" {
			t.Fatalf("%s: the 404 of %s does not name %s as the owner: %v", svc, other, holder, nf)
		}
		if want := "http://" + holder + ".peers:8080/state/errors?key=" + svc; owner["url"] != want {
			t.Fatalf("%s: the 404 of %s gives the owner URL %v, want %s", svc, other, owner["url"], want)
		}
		got := bodies[holder]
		wins, _ := got["windows"].([]any)
		if got["key"] != svc || got["route"] != "errors" || len(wins) != 2 {
			t.Fatalf("%s: %v", svc, got)
		}
		w0, _ := json.Marshal(wins[0])
		want0 := fmt.Sprintf(`{"aggregates":{"max_latency":%d,"n":%d},"final":false,"key":%q,"revision":1,"window_end":1010000,"window_start":1000000}`, i+1, i+1, svc)
		if string(w0) != want0 {
			t.Fatalf("%s: first window %s, want %s", svc, w0, want0)
		}
		w1, _ := json.Marshal(wins[1])
		want1 := fmt.Sprintf(`{"aggregates":{"max_latency":7,"n":1},"final":false,"key":%q,"revision":0,"window_end":1020000,"window_start":1010000}`, svc)
		if string(w1) != want1 {
			t.Fatalf("%s: second window %s, want %s", svc, w1, want1)
		}
	}
	if answered["a"] == 0 || answered["b"] == 0 {
		t.Fatalf("one instance holds every key (%v): the 404 path is not exercised both ways", answered)
	}

	// A key nobody produced is still located: its owner answers with no windows.
	for _, id := range []string{"a", "b"} {
		code, body := getState(t, hs[id], "/state/errors?key=never-seen")
		if code == 200 {
			if ws, _ := body["windows"].([]any); len(ws) != 0 {
				t.Fatalf("windows for an unseen key: %v", body)
			}
		} else if code != 404 {
			t.Fatalf("unseen key on %s: %d %v", id, code, body)
		}
	}
	if code, body := getState(t, hs["a"], "/state/nope?key=svc-01"); code != 404 || body["error"] == nil {
		t.Fatalf("unknown route: %d %v", code, body)
	}
	if code, _ := getState(t, hs["a"], "/state/errors"); code != 400 {
		t.Fatalf("missing key: %d", code)
	}
	t.Logf("keys answered by instance: %v", answered)

	// A new instance that has seen no record yet restores a partition's
	// state from the changelog for the query itself.
	a.stop(t)
	b.stop(t)
	c2 := start(t, top, "c")
	for deadline := time.Now().Add(time.Minute); owned(c2.p) != 6 || c2.p.stage.Partitions() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the new instance does not own every partition: %v", c2.p.Tasks())
		}
	}
	hc := stateHandler(c2.p)
	code, body := getState(t, hc, "/state/errors?key=svc-05")
	for deadline := time.Now().Add(time.Minute); code == 503 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		code, body = getState(t, hc, "/state/errors?key=svc-05")
	}
	wins, _ := body["windows"].([]any)
	if code != 200 || len(wins) != 2 {
		t.Fatalf("after restart: %d %v", code, body)
	}
	if w0, _ := json.Marshal(wins[0]); !strings.Contains(string(w0), `"aggregates":{"max_latency":6,"n":6}`) {
		t.Fatalf("after restart: first window %s", w0)
	}
	if r := testutil.ToFloat64(c2.p.Metrics().RestoredRecords.WithLabelValues("errors")); r == 0 {
		t.Fatalf("the query restored no changelog records")
	}
}
