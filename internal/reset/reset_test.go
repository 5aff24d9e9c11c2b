package reset

import (
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

const windowYAML = `application_id: reset-unit
brokers: [%s]
inputs: [{topic: logs}]
event_time: {field: ts, format: epoch_ms}
routing: {match: all, default: drop}
routes:
  - name: per-service
    topic: errors.per-service
    window:
      type: tumbling
      size: 10s
      group_by: service
      late_topic: errors.late
      aggregates: [{name: n, fn: count}]
dirty: {topic: logs.dirty}
`

func TestToString(t *testing.T) {
	at := time.Date(2026, 12, 1, 1, 2, 3, 0, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		to   To
		want string
	}{{To{}, "earliest"}, {To{Latest: true}, "latest"}, {To{At: at}, "2026-12-01T00:02:03Z"}} {
		if got := tc.to.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.to, got, tc.want)
		}
	}
}

// TestPlanAndApply: on kfake, a plan refuses while a member is in the
// group, names the committed and target offsets of every input partition,
// the internal topics that exist and the group's offsets on the
// repartition topic; after Apply the internal topics are gone and the
// group holds only its input offsets, at the targets.
func TestPlanAndApply(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	cfg, err := config.Load("reset.yaml", fmt.Appendf(nil, windowYAML, strings.Join(brokers, ",")))
	if err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	group := top.Settings.ApplicationID
	repartition, changelogs := top.InternalTopics()
	if len(repartition) != 1 || len(changelogs) != 1 {
		t.Fatalf("internal topics %v %v, want one repartition and one changelog topic", repartition, changelogs)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, tp := range append(slices.Clone(repartition), changelogs...) {
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Partition: int32(i % 3), Value: []byte(`{}`)})
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	for p := range int32(3) {
		offs.Add(kadm.Offset{Topic: "logs", Partition: p, At: int64(4 + p), LeaderEpoch: -1})
	}
	offs.Add(kadm.Offset{Topic: repartition[0], Partition: 0, At: 0, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, group, offs); err != nil {
		t.Fatal(err)
	}

	// A member in the group: refused, naming it.
	member, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics("logs"), kgo.ClientID("router-a"))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		pollCtx, stop := context.WithTimeout(ctx, 200*time.Millisecond)
		member.PollFetches(pollCtx)
		stop()
		_, err = NewPlan(ctx, adm, top, To{})
		if err != nil || time.Now().After(deadline) {
			break
		}
	}
	if !errors.Is(err, ErrGroupActive) || !strings.Contains(err.Error(), "router-a") {
		t.Fatalf("plan with a member: %v, want ErrGroupActive naming router-a", err)
	}
	member.Close() // leaves the group

	plan, err := NewPlan(ctx, adm, top, To{Latest: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []Offset{{"logs", 0, 4, 10}, {"logs", 1, 5, 10}, {"logs", 2, 6, 10}}
	if plan.Group != group || plan.To != "latest" || !slices.Equal(plan.Inputs, want) {
		t.Fatalf("latest plan %+v, want inputs %+v", plan, want)
	}
	plan, err = NewPlan(ctx, adm, top, To{})
	if err != nil {
		t.Fatal(err)
	}
	want = []Offset{{"logs", 0, 4, 0}, {"logs", 1, 5, 0}, {"logs", 2, 6, 0}}
	if !slices.Equal(plan.Inputs, want) || !slices.Equal(plan.Topics, append(slices.Clone(repartition), changelogs...)) ||
		!slices.Equal(plan.Offsets, repartition) {
		t.Fatalf("earliest plan %+v: want inputs %+v, topics %v %v, offsets on %v", plan, want, repartition, changelogs, repartition)
	}

	if err := plan.Apply(ctx, adm); err != nil {
		t.Fatal(err)
	}
	md, err := adm.ListTopics(ctx, plan.Topics...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range plan.Topics {
		if d, ok := md[tp]; ok && d.Err == nil {
			t.Errorf("topic %s still exists after Apply", tp)
		}
	}
	got, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	got.Each(func(o kadm.OffsetResponse) {
		n++
		if o.Topic != "logs" || o.At != 0 {
			t.Errorf("after Apply the group has %s[%d] at %d, want only logs at 0", o.Topic, o.Partition, o.At)
		}
	})
	if n != 3 {
		t.Errorf("after Apply the group has %d offsets, want the 3 of logs", n)
	}
}
