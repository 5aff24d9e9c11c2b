package demo

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStatusLine(t *testing.T) {
	written := map[string]float64{"logs.main": 700, "logs.dirty": 3}
	for _, tc := range []struct {
		name string
		s    status
		want string
	}{
		{"generating", status{target: 2000, produced: 1000, writing: true, consumed: 900, rate: 500, written: written},
			"demo: produced 1000/2000 (50%), consumed 900, 500/s, ETA 2s; written logs.dirty=3 logs.main=700"},
		{"no rate yet", status{target: 2000, produced: 0, writing: true, written: written},
			"demo: produced 0/2000 (0%), consumed 0, 0/s, ETA -; written logs.dirty=3 logs.main=700"},
		{"target unknown", status{produced: 10, consumed: 5, rate: 5, written: written},
			"demo: produced 10, consumed 5, 5/s, ETA -; written logs.dirty=3 logs.main=700"},
		{"drain", status{target: 20, produced: 20, consumed: 20, wait: WaitDrain, waitFor: 1400 * time.Millisecond, waitDetail: "7 repartitioned records left for stage two", written: written},
			"demo: produced 20/20 (100%), consumed 20; draining (1s): 7 repartitioned records left for stage two; written logs.dirty=3 logs.main=700"},
		{"ttl", status{target: 20, produced: 20, consumed: 20, wait: WaitTTL, waitFor: 3 * time.Second, waitDetail: "4 assemblies open until their TTL (v 10s on processing time)", written: written},
			"demo: produced 20/20 (100%), consumed 20; waiting ttl (3s): 4 assemblies open until their TTL (v 10s on processing time); written logs.dirty=3 logs.main=700"},
		{"done", status{target: 20, produced: 20, consumed: 20, done: true, rate: 40, waitFor: 500 * time.Millisecond, written: written},
			"demo: produced 20/20 (100%), consumed 20, done: 40/s over 500ms active; written logs.dirty=3 logs.main=700"},
	} {
		if got := tc.s.line(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestLiveLineOnTerminalAndPipe(t *testing.T) {
	var pipe bytes.Buffer
	l := newLiveLine(&pipe)
	l.show("one")
	l.show("two")
	l.end()
	if pipe.String() != "one\ntwo\n" {
		t.Errorf("piped: %q", pipe.String())
	}
	var tty bytes.Buffer
	l = &liveLine{w: &tty, tty: true, width: 10}
	l.show("short")
	l.show("a line longer than ten")
	l.end()
	l.end() // once only
	if want := "\rshort\x1b[K\ra line l…\x1b[K\n"; tty.String() != want {
		t.Errorf("terminal: %q, want %q", tty.String(), want)
	}
}

func TestPhaseLeavesTheTTLWaitOut(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ph := &phase{start: t0, waits: map[string]time.Duration{}}
	ph.note(t0, "")
	ph.note(t0.Add(2*time.Second), WaitDrain) // 2 s active
	ph.note(t0.Add(3*time.Second), WaitTTL)   // 1 s draining: active too
	ph.stop(t0.Add(13 * time.Second))         // 10 s waiting for the TTL
	if got := ph.active(); got != 3*time.Second {
		t.Errorf("active %s, want 3s", got)
	}
	if w := ph.waitSeconds(); len(w) != 1 || w[WaitTTL] != 10 {
		t.Errorf("waits %v, want ttl 10", w)
	}
}

// TestDemoProgressWhileGenerating: at --rate 1000 the writer takes about
// three seconds; lines come from the first second, with produced below
// the target and records already consumed (generation runs alongside
// processing), and the rate is over the active time.
func TestDemoProgressWhileGenerating(t *testing.T) {
	code, out, errs := run(t, Options{Records: 3000, Rate: 1000})
	if code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", code, out, errs)
	}
	re := regexp.MustCompile(`demo: produced (\d+)/3000 \(\d+%\), consumed (\d+), \d+/s, ETA \S+; written `)
	alongside := false
	for _, m := range re.FindAllStringSubmatch(errs, -1) {
		p, _ := strconv.Atoi(m[1])
		c, _ := strconv.Atoi(m[2])
		if p < 3000 && c > 0 {
			alongside = true
		}
	}
	if !alongside {
		t.Fatalf("no line shows records consumed while the generator was still writing:\n%s", errs)
	}
	if !strings.Contains(errs, ", done: ") {
		t.Errorf("no final line:\n%s", errs)
	}
	res := verdictOf(t, out)
	if res.RecordsPerS > 1100 || res.RecordsPerS < 500 || res.ActiveSeconds > res.Seconds {
		t.Errorf("--rate 1000: %.0f records/s over %.1fs active of %.1fs", res.RecordsPerS, res.ActiveSeconds, res.Seconds)
	}
}

// TestDemoNamesTheTTLWait: the order-payment-shipment example leaves
// assemblies open for its 10 s processing-time TTL once every record is
// processed; the live line says so, and the rate leaves the wait out.
func TestDemoNamesTheTTLWait(t *testing.T) {
	code, out, errs := run(t, Options{Config: "../../examples/order-payment-shipment.yaml", Records: 500})
	if code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", code, out, errs)
	}
	if !regexp.MustCompile(`waiting ttl \(\d+s\): \d+ assemblies open until their TTL \(order-view 10s on processing time\)`).MatchString(errs) {
		t.Fatalf("no line names the TTL wait:\n%s", errs)
	}
	res := verdictOf(t, out)
	if res.Waits[WaitTTL] < 5 || res.ActiveSeconds > res.Seconds-5 {
		t.Errorf("waits %v, active %.1fs of %.1fs", res.Waits, res.ActiveSeconds, res.Seconds)
	}
	if want := float64(res.Produced) / res.ActiveSeconds; res.RecordsPerS != want {
		t.Errorf("records_per_second %.1f, want produced/active %.1f", res.RecordsPerS, want)
	}
}
