package itest

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sidestream/sidestream/internal/metrics"
)

// TestBreakingChangeHoldsRoute: a window route beside a stateless one
// runs until it has state; the router restarts with an aggregate added
// to the window. The stateless route keeps producing (measured over a
// span) while /readyz names the held route and what differs, and the
// held route's committed offsets on its repartition topic stay put.
// router reset --route then resets exactly that route (the input
// offsets untouched) and it runs again.
func TestBreakingChangeHoldsRoute(t *testing.T) {
	base := newScenario(t, "held", 12_000)
	prefix := base.app + "-hd"
	repl := [][2]string{
		{"application_id: errors-per-service\n", "application_id: " + prefix + "\n"},
		{"  - topic: logs\n", "  - topic: " + base.input + "\n"},
		{"topic: errors.", "topic: " + prefix + ".errors."},
		{"match: first", "match: all"},
		{"routes:\n  - name: errors", "routes:\n  - name: copy\n    topic: " + prefix + ".copy\n  - name: errors"},
	}
	old, _ := base.derivedRun("hd", "../internal/runtime/testdata/errors-per-service.yaml", repl)
	changed, top := base.derivedRun("hd", "../internal/runtime/testdata/errors-per-service.yaml", append(repl, [2]string{
		"        - {name: max_latency, fn: max, of: latency_ms}\n",
		"        - {name: max_latency, fn: max, of: latency_ms}\n        - {name: smallest, fn: min, of: latency_ms}\n"}))
	rep := top.Route("errors").Window.RepartitionTopic

	p := base.startProducer(400)
	r := old.startRouter("x", fastGroup...)
	r.waitReady(time.Minute)
	waitFor(t, 2*time.Minute, "the window aggregates", func() (bool, string) {
		n := r.metric(t, metrics.NameAggregated, `route="errors"`)
		return n > 100, fmt.Sprint(n)
	})
	r.stop(40 * time.Second)
	offsets := func() map[string]map[int32]int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		offs, err := base.adm.FetchOffsets(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]map[int32]int64{}
		offs.Each(func(o kadm.OffsetResponse) {
			if out[o.Topic] == nil {
				out[o.Topic] = map[int32]int64{}
			}
			out[o.Topic][o.Partition] = o.At
		})
		return out
	}
	before := offsets()[rep]

	r2 := changed.startRouter("x", fastGroup...)
	var why string
	waitFor(t, time.Minute, "/readyz names the held route", func() (bool, string) {
		code, body := r2.readyz()
		why = body
		return code == http.StatusServiceUnavailable && strings.Contains(body, "route errors held"), fmt.Sprint(code, " ", body)
	})
	for _, want := range []string{"window.aggregates: added", "smallest", "router reset --route errors", "state_version"} {
		if !strings.Contains(why, want) {
			t.Fatalf("/readyz %q does not say %q", why, want)
		}
	}
	// The stateless route goes on: its records over a span.
	c0, at := r2.metric(t, metrics.NameRouteWritten, `route="copy"`), time.Now()
	waitFor(t, time.Minute, "the stateless route produces while errors is held", func() (bool, string) {
		n := r2.metric(t, metrics.NameRouteWritten, `route="copy"`) - c0
		return n >= 2000, fmt.Sprint(n)
	})
	c1, span := r2.metric(t, metrics.NameRouteWritten, `route="copy"`), time.Since(at)
	if held := r2.metric(t, metrics.NameRouteHeld, `route="errors"`); held != 1 {
		t.Fatalf("sidestream_route_held{route=errors} = %v", held)
	}
	r2.stop(40 * time.Second)
	t.Logf("scenario=held copy_records=%v span=%s rate=%.0f/s", c1-c0, span.Round(time.Millisecond), (c1-c0)/span.Seconds())
	held := offsets()
	for part, off := range held[rep] {
		if off != before[part] {
			t.Fatalf("the held route's offset of %s[%d] moved %d -> %d", rep, part, before[part], off)
		}
	}

	out, err := exec.Command(routerBin, "reset", "--route", "errors", "--config", changed.config, "--brokers", strings.Join(base.brokers, ",")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "route errors: 2 topics deleted") {
		t.Fatalf("reset --route: %v\n%s", err, out)
	}
	after := offsets()
	if _, ok := after[rep]; ok {
		t.Fatalf("the group's offsets on %s survived the route reset", rep)
	}
	for part, off := range held[base.input] {
		if after[base.input][part] != off {
			t.Fatalf("the route reset moved the input %s[%d]: %d -> %d", base.input, part, off, after[base.input][part])
		}
	}

	r3 := changed.startRouter("x", fastGroup...)
	r3.waitReady(time.Minute)
	waitFor(t, 2*time.Minute, "the reset route aggregates again", func() (bool, string) {
		n := r3.metric(t, metrics.NameAggregated, `route="errors"`)
		return n > 0, fmt.Sprint(n)
	})
	if held := r3.metric(t, metrics.NameRouteHeld, `route="errors"`); held != 0 {
		t.Fatalf("after the reset sidestream_route_held{route=errors} = %v", held)
	}
	r3.stop(40 * time.Second)
	p.wait(t, 2*time.Minute)
}
