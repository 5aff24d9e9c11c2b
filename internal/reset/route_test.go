package reset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
)

const twoWindowsYAML = `application_id: reset-route
brokers: [%s]
inputs: [{topic: logs}]
event_time: {field: ts, format: epoch_ms}
routing: {match: all, default: drop}
routes:
  - name: copy
    topic: logs.copy
  - name: per-service
    topic: errors.per-service
    state_version: %d
    window:
      type: tumbling
      size: 10s
      group_by: service
      late_topic: errors.late
      aggregates: [{name: n, fn: count}]
  - name: per-host
    topic: errors.per-host
    window:
      type: tumbling
      size: 10s
      group_by: host
      late_topic: hosts.late
      aggregates: [{name: n, fn: count}]
  - name: direct
    topic: errors.direct
    window:
      type: tumbling
      size: 10s
      repartition: false
      late_topic: direct.late
      aggregates: [{name: n, fn: count}]
dirty: {topic: logs.dirty}
`

func compileTwo(t *testing.T, brokers []string, version int) *plan.Plan {
	t.Helper()
	cfg, err := config.Load("reset.yaml", fmt.Appendf(nil, twoWindowsYAML, strings.Join(brokers, ","), version))
	if err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// TestRoutePlanAndApply: on kfake, a route reset names exactly the
// route's changelog and repartition topics and the group's offsets on
// its repartition topic, never another route's nor an input's; it
// refuses while the group has a member, a route that is not stateful and
// a route without a repartition topic; --stale names only the route's
// topics of other state versions; Apply deletes what the plan names and
// leaves every other topic and offset as it was.
func TestRoutePlanAndApply(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	v0, v2 := compileTwo(t, brokers, 0), compileTwo(t, brokers, 2)
	group := v0.Settings.ApplicationID
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The topics of both versions exist, as after a state_version change.
	r0, c0 := v0.InternalTopics()
	r2, c2 := v2.InternalTopics()
	all := slices.Compact(slices.Sorted(slices.Values(append(append(append(r0, c0...), r2...), c2...))))
	for _, tp := range all {
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	for p := range int32(3) {
		offs.Add(kadm.Offset{Topic: "logs", Partition: p, At: int64(4 + p), LeaderEpoch: -1})
		for _, rep := range append(slices.Clone(r0), r2...) {
			offs.Add(kadm.Offset{Topic: rep, Partition: p, At: int64(7 + p), LeaderEpoch: -1})
		}
	}
	if err := adm.CommitAllOffsets(ctx, group, offs); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct{ route, want string }{
		{"copy", "not a window or assembly route"}, {"nope", "not a window or assembly route"}, {"direct", "no repartition topic"},
	} {
		if _, err := NewRoutePlan(ctx, adm, v0, bad.route, false); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("route %s: %v, want %q", bad.route, err, bad.want)
		}
	}

	member, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics("logs"), kgo.ClientID("router-a"))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		pollCtx, stop := context.WithTimeout(ctx, 200*time.Millisecond)
		member.PollFetches(pollCtx)
		stop()
		_, err = NewRoutePlan(ctx, adm, v0, "per-service", false)
		if err != nil || time.Now().After(deadline) {
			break
		}
	}
	if !errors.Is(err, ErrGroupActive) {
		t.Fatalf("route plan with a member: %v, want ErrGroupActive", err)
	}
	member.Close()

	// Under version 2, --stale names version 0's topics of per-service only.
	stale, err := NewRoutePlan(ctx, adm, v2, "per-service", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"reset-route-per-service-changelog", "reset-route-per-service-repartition"}; !slices.Equal(stale.Topics, want) ||
		!slices.Equal(stale.Offsets, want[1:]) || len(stale.Inputs) != 0 {
		t.Fatalf("stale plan %+v, want topics %v and offsets on %v", stale, want, want[1:])
	}

	p, err := NewRoutePlan(ctx, adm, v2, "per-service", false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"reset-route-per-service-v2-changelog", "reset-route-per-service-v2-repartition"}
	if p.Route != "per-service" || !slices.Equal(p.Topics, want) || !slices.Equal(p.Offsets, want[1:]) || len(p.Inputs) != 0 {
		t.Fatalf("route plan %+v, want topics %v, offsets on %v, no input", p, want, want[1:])
	}
	var out bytes.Buffer
	p.Print(&out, nil)
	for _, s := range []string{"reset of route per-service", "input offsets and the other routes unchanged", want[0], want[1]} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("dry-run plan %q does not say %q", out.String(), s)
		}
	}

	before, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, adm); err != nil {
		t.Fatal(err)
	}
	md, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range all {
		_, exists := md[tp]
		if gone := slices.Contains(want, tp); exists == gone {
			t.Errorf("topic %s exists %v after Apply, want %v", tp, exists, !gone)
		}
	}
	after, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	before.Each(func(o kadm.OffsetResponse) {
		a, ok := after.Lookup(o.Topic, o.Partition)
		switch {
		case o.Topic == want[1]:
			if ok && a.Err == nil {
				t.Errorf("the group's offset on %s[%d] is still there", o.Topic, o.Partition)
			}
		case !ok || a.At != o.At:
			t.Errorf("the group's offset on %s[%d] changed: %d -> %+v", o.Topic, o.Partition, o.At, a)
		}
	})
}
