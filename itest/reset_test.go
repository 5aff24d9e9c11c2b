package itest

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sidestream/sidestream/internal/metrics"
)

// TestResetReprocesses: a window route runs over its input and stops;
// router reset (refused while the router is in the group) deletes its
// repartition and changelog topics and the group's offsets on them, and
// moves the input offsets to the start. The next run, under
// on_changelog_loss: fail, reports no loss and reads every input record
// again: its consumed count is the input's size.
func TestResetReprocesses(t *testing.T) {
	base := newScenario(t, "reset", 6_000)
	w := newWindowRun(base, "rs", "aligned")
	p := base.startProducer(0)
	r := w.startRouter("x", fastGroup...)
	r.waitReady(time.Minute)
	w.waitWindowDone(p, 2*time.Minute, r)

	reset := func(args ...string) (string, error) {
		out, err := exec.Command(routerBin, append([]string{"reset", "--config", w.config, "--brokers", strings.Join(w.brokers, ",")}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := reset(); err == nil || !strings.Contains(out, "active members") {
		t.Fatalf("reset with the router in the group: %v\n%s", err, out)
	}
	r.stop(40 * time.Second)
	out, err := reset()
	if err != nil || !strings.Contains(out, "6 input partitions moved to earliest, 2 topics deleted") {
		t.Fatalf("reset: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := w.adm.ListTopics(ctx, w.repartition, w.changelog)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range []string{w.repartition, w.changelog} {
		if d, ok := md[tp]; ok && d.Err == nil {
			t.Fatalf("%s exists after the reset", tp)
		}
	}
	offs, err := w.adm.FetchOffsets(ctx, w.app)
	if err != nil {
		t.Fatal(err)
	}
	starts, err := w.adm.ListStartOffsets(ctx, w.input)
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		s, _ := starts.Lookup(o.Topic, o.Partition)
		if o.Topic != w.input || o.At != s.Offset || o.Metadata != "" {
			t.Fatalf("after the reset: %s[%d] at %d (metadata %q), want the input at its start %d, no metadata", o.Topic, o.Partition, o.At, o.Metadata, s.Offset)
		}
	})

	r2 := w.startRouter("x", fastGroup...)
	r2.waitReady(time.Minute)
	w.waitWindowDone(p, 2*time.Minute, r2)
	consumed := r2.metric(t, metrics.NameConsumed, `topic="`+w.input+`"`)
	losses := r2.metric(t, metrics.NameChangelogLoss, "")
	r2.stop(40 * time.Second)
	if int(consumed) != len(base.events) || losses != 0 {
		t.Fatalf("after the reset: consumed %v of %d input records, %v changelog losses", consumed, len(base.events), losses)
	}
	t.Logf("scenario=reset records=%d reconsumed=%v losses=%v", len(base.events), consumed, losses)
}
