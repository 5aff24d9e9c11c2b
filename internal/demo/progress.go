package demo

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
)

// What the demo waits for once every input record is consumed, as the
// live line names it.
const (
	// WaitDrain: stage two has repartitioned records left to process
	// (window and assembly routes). The router is working: its time is
	// active time.
	WaitDrain = "drain"
	// WaitTTL: every record is processed and assemblies stay open until
	// their TTL passes on the wall clock. The router has nothing to do:
	// the verdict's rate leaves this time out.
	WaitTTL = "ttl"
)

// progress is what the writer has done: the records it means to write
// (known once it has generated them) and the ones the broker
// acknowledged so far. The writer's goroutine and the producer's
// promises set it; the watch reads it.
type progress struct {
	target atomic.Int64
	acked  atomic.Int64
}

// ack counts a record the broker acknowledged.
func (p *progress) ack() { p.acked.Add(1) }

// phase times the demo: each wait's time since the start, the rest is
// active.
type phase struct {
	start    time.Time
	end      time.Time // when every record was committed (stop)
	waits    map[string]time.Duration
	lastWait string // "" while writing or consuming input
	lastAt   time.Time
}

// note accounts for the time since the last note under the wait that
// held then, and says what holds from now.
func (ph *phase) note(now time.Time, wait string) {
	if ph.lastWait != "" {
		ph.waits[ph.lastWait] += now.Sub(ph.lastAt)
	}
	ph.lastWait, ph.lastAt = wait, now
}

// stop ends the timing: every record is committed.
func (ph *phase) stop(now time.Time) {
	ph.note(now, "")
	ph.end = now
}

// active is the time the router had records to process, start to stop
// but the TTL wait.
func (ph *phase) active() time.Duration {
	return ph.end.Sub(ph.start) - ph.waits[WaitTTL]
}

// waitSeconds is the time of the waits the rate leaves out (nil: none).
func (ph *phase) waitSeconds() map[string]float64 {
	if d := ph.waits[WaitTTL]; d > 0 {
		return map[string]float64{WaitTTL: d.Seconds()}
	}
	return nil
}

// liveLine writes the progress: one line rewritten in place on a
// terminal, a plain line each time otherwise.
type liveLine struct {
	w     io.Writer
	tty   bool
	width int
	shown bool
}

func newLiveLine(w io.Writer) *liveLine {
	l := &liveLine{w: w, width: 120}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			l.tty = true
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 20 {
		l.width = c
	}
	return l
}

func (l *liveLine) show(s string) {
	if !l.tty {
		fmt.Fprintln(l.w, s)
		return
	}
	if len(s) >= l.width {
		s = s[:l.width-2] + "…"
	}
	// \r back to the start, \x1b[K clears what a longer line left.
	fmt.Fprint(l.w, "\r"+s+"\x1b[K")
	l.shown = true
}

// end ends a refreshing line with its newline.
func (l *liveLine) end() {
	if l.tty && l.shown {
		fmt.Fprintln(l.w)
		l.shown = false
	}
}

// status is one reading of the demo for the live line.
type status struct {
	target, produced int64
	writing          bool
	done             bool    // rate is the verdict's, waitFor the active time
	consumed         float64 // input records committed
	rate             float64 // input records per second, over the last reading
	wait             string  // "" while active
	waitFor          time.Duration
	waitDetail       string
	written          map[string]float64 // by topic
}

// line renders a status: produced of target, consumed, rate and ETA,
// or the wait, then the records written per topic.
func (s status) line() string {
	var b strings.Builder
	b.WriteString("demo: ")
	if s.target > 0 {
		fmt.Fprintf(&b, "produced %d/%d (%d%%)", s.produced, s.target, s.produced*100/s.target)
	} else {
		fmt.Fprintf(&b, "produced %d", s.produced)
	}
	fmt.Fprintf(&b, ", consumed %d", int64(s.consumed))
	switch {
	case s.done:
		fmt.Fprintf(&b, ", done: %.0f/s over %s active", s.rate, s.waitFor.Round(time.Millisecond))
	case s.wait == WaitDrain:
		fmt.Fprintf(&b, "; draining (%s): %s", s.waitFor.Round(time.Second), s.waitDetail)
	case s.wait != "":
		fmt.Fprintf(&b, "; waiting %s (%s): %s", s.wait, s.waitFor.Round(time.Second), s.waitDetail)
	default:
		fmt.Fprintf(&b, ", %.0f/s, ETA %s", s.rate, s.eta())
	}
	topics := make([]string, 0, len(s.written))
	for t := range s.written {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	b.WriteString("; written")
	for _, t := range topics {
		fmt.Fprintf(&b, " %s=%d", t, int64(s.written[t]))
	}
	return b.String()
}

// eta is the time left to consume the target at the current rate ("-"
// when it cannot be told).
func (s status) eta() string {
	left := float64(s.target) - s.consumed
	switch {
	case s.target == 0 || s.rate <= 0:
		return "-"
	case left <= 0:
		return "0s"
	}
	return (time.Duration(left / s.rate * float64(time.Second))).Round(time.Second).String()
}

// waiting says what the demo waits for once every input record is
// consumed ("" when nothing is left), with a detail for the live line:
// stage two's repartitioned records still to process, or assemblies
// open until their processing-time TTL (closeAll: the generator's
// records, which close every assembly).
func waiting(top *plan.Plan, m *metrics.Metrics, closeAll bool) (string, string) {
	var behind float64
	for _, r := range top.Routes {
		rep := ""
		switch {
		case r.Window != nil:
			rep = r.Window.RepartitionTopic
		case r.Assembly != nil:
			rep = r.Assembly.RepartitionTopic
		default:
			continue
		}
		behind += max(testutil.ToFloat64(m.RouteIn.WithLabelValues(r.Name))-testutil.ToFloat64(m.Repartitioned.WithLabelValues(rep)), 0)
	}
	if behind > 0 {
		return WaitDrain, fmt.Sprintf("%d repartitioned records left for stage two", int64(behind))
	}
	if !closeAll {
		return "", ""
	}
	var open float64
	mfs, _ := m.Registry.Gather()
	for _, mf := range mfs {
		if mf.GetName() == metrics.NameAssembliesOpen {
			for _, mt := range mf.GetMetric() {
				open += mt.GetGauge().GetValue()
			}
		}
	}
	if open == 0 {
		return "", ""
	}
	var ttls []string
	for _, r := range top.Assemblies() {
		ttls = append(ttls, fmt.Sprintf("%s %s on %s time", r.Name, r.Assembly.Spec.TTL.D(), r.Assembly.Spec.Time))
	}
	return WaitTTL, fmt.Sprintf("%d assemblies open until their TTL (%s)", int64(open), strings.Join(ttls, ", "))
}

// status is a reading for the live line; rate is the input records per
// second since the last reading.
func (ph *phase) status(prog *progress, s metrics.Snapshot, rate float64, writing bool, wait, detail string) status {
	st := status{target: prog.target.Load(), produced: prog.acked.Load(), writing: writing, consumed: s.Consumed,
		rate: rate, wait: wait, waitDetail: detail, written: s.Written}
	if wait != "" {
		st.waitFor = ph.waits[wait] + time.Since(ph.lastAt)
	}
	return st
}
