package live

import (
	"context"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/metrics"
)

func TestHistoryRates(t *testing.T) {
	h := NewHistory(4)
	t0 := time.UnixMilli(1_000_000)
	if v := h.View(); len(v.Times) != 0 || len(v.Rates) != 0 {
		t.Fatalf("empty history: %+v", v)
	}
	h.Add(t0, map[string]float64{"route/a": 0})
	if v := h.View(); len(v.Times) != 0 {
		t.Fatalf("one sample is no rate yet: %+v", v)
	}
	h.Add(t0.Add(5*time.Second), map[string]float64{"route/a": 50})
	// A key that appears later was 0 before; a counter that goes down
	// (its series restarted) is 0 over that interval, never negative.
	h.Add(t0.Add(10*time.Second), map[string]float64{"route/a": 10, "dirty": 20})
	h.Add(t0.Add(20*time.Second), map[string]float64{"route/a": 110, "dirty": 20})
	v := h.View()
	if want := []int64{1_005_000, 1_010_000, 1_020_000}; !equalInts(v.Times, want) {
		t.Fatalf("times %v, want %v", v.Times, want)
	}
	if want := []float64{10, 0, 10}; !equalFloats(v.Rates["route/a"], want) {
		t.Fatalf("route/a %v, want %v", v.Rates["route/a"], want)
	}
	if want := []float64{0, 4, 0}; !equalFloats(v.Rates["dirty"], want) {
		t.Fatalf("dirty %v, want %v", v.Rates["dirty"], want)
	}
	// The ring holds 4 samples: the fifth pushes the first out.
	h.Add(t0.Add(25*time.Second), map[string]float64{"route/a": 160, "dirty": 30})
	v = h.View()
	if want := []int64{1_010_000, 1_020_000, 1_025_000}; !equalInts(v.Times, want) {
		t.Fatalf("after wrapping: times %v, want %v", v.Times, want)
	}
	if want := []float64{0, 10, 10}; !equalFloats(v.Rates["route/a"], want) {
		t.Fatalf("after wrapping: route/a %v, want %v", v.Rates["route/a"], want)
	}
}

// TestHistoryOracle checks the ring against the plain list of every
// sample: the view is the rates of the last size samples, in order.
func TestHistoryOracle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := rapid.IntRange(2, 8).Draw(rt, "size")
		h := NewHistory(size)
		type sample struct {
			at time.Time
			v  map[string]float64
		}
		var all []sample
		at, c := time.UnixMilli(0), map[string]float64{}
		for range rapid.IntRange(0, 30).Draw(rt, "samples") {
			at = at.Add(time.Duration(rapid.IntRange(1, 10_000).Draw(rt, "ms")) * time.Millisecond)
			next := map[string]float64{}
			for _, k := range []string{"a", "b"} {
				next[k] = max(0, c[k]+float64(rapid.IntRange(-3, 100).Draw(rt, k)))
			}
			c = next
			h.Add(at, next)
			all = append(all, sample{at, next})
		}
		v := h.View()
		kept := all[max(0, len(all)-size):]
		if len(kept) < 2 {
			if len(v.Times) != 0 {
				rt.Fatalf("%d samples: %d rates", len(kept), len(v.Times))
			}
			return
		}
		if len(v.Times) != len(kept)-1 {
			rt.Fatalf("%d intervals, want %d", len(v.Times), len(kept)-1)
		}
		for i := 1; i < len(kept); i++ {
			if v.Times[i-1] != kept[i].at.UnixMilli() {
				rt.Fatalf("interval %d ends %d, want %d", i-1, v.Times[i-1], kept[i].at.UnixMilli())
			}
			secs := kept[i].at.Sub(kept[i-1].at).Seconds()
			for _, k := range []string{"a", "b"} {
				want := max(0, kept[i].v[k]-kept[i-1].v[k]) / secs
				if got := v.Rates[k][i-1]; math.Abs(got-want) > 1e-9 {
					rt.Fatalf("rate %s[%d] = %v, want %v", k, i-1, got, want)
				}
			}
		}
	})
}

// TestRunHistory samples a State's real counters: records counted in the
// metrics show as a rate in the history.
func TestRunHistory(t *testing.T) {
	top := load(t, "../../examples/logs-by-level.yaml")
	m := metrics.New()
	s := New(top, m, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.RunHistory(ctx, 20*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.History().Times) == 0 { // sampling has begun
		if time.Now().After(deadline) {
			t.Fatal("no samples")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tl := metrics.NewTally()
	tl.Consumed["logs"] = 1000
	m.Observe(tl)
	for {
		v := s.History()
		total := 0.0
		for _, r := range v.Rates["consumed/logs"] {
			total += r
		}
		if total > 0 {
			if _, ok := v.Rates["route/main"]; !ok {
				t.Fatalf("a route without records has no series: %v", v.Rates)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no consumed rate in the history: %+v", v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}
