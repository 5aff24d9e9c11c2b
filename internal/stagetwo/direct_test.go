package stagetwo

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
)

// TestHashPartitionIsKafkas: the partition a direct assembly checks each
// part's ID against is Kafka's default (murmur2) key partition, which a
// producer with that partitioner wrote it to, and the one a state query
// looks the ID up in.
func TestHashPartitionIsKafkas(t *testing.T) {
	const rep = "app-assembled-repartition"
	top := &plan.Plan{Routes: []*plan.RouteNode{{Name: "assembled",
		Assembly: &plan.AssemblyNode{RepartitionTopic: rep, ChangelogTopic: "app-assembled-changelog", Direct: true}}}}
	part := NewPartitioner(top)
	tp := part.ForTopic(rep)
	rapid.Check(t, func(t *rapid.T) {
		key := rapid.SliceOfN(rapid.Byte(), 1, 64).Draw(t, "key")
		n := rapid.IntRange(1, 256).Draw(t, "partitions")
		r := &kgo.Record{Topic: rep, Key: key}
		got := hashPartition(tp, r, n)
		kafka := int32(kgo.StickyKeyPartitioner(nil).ForTopic(rep).Partition(&kgo.Record{Topic: rep, Key: key}, n))
		if got != kafka {
			t.Fatalf("key %q, %d partitions: %d, Kafka's default partitioner %d", key, n, got, kafka)
		}
		if q := KeyPartition(part, rep, key, n); q != got {
			t.Fatalf("key %q, %d partitions: %d, a state query %d", key, n, got, q)
		}
	})
}

// TestWithDirectDropsAssemblyTasks: revoking (or aborting) an input
// partition drops the direct assembly task of the same number, which is
// known by the route's virtual repartition topic name; nil still means all.
func TestWithDirectDropsAssemblyTasks(t *testing.T) {
	top := topo(t, "inputs: [{topic: orders}, {topic: payments}]\n", `routes:
  - name: paid
    topic: orders.paid
    assemble:
      id: order_id
      parts:
        - {name: order, source: orders}
        - {name: payment, source: payments}
      ttl: 1h
      incomplete_topic: orders.unpaid
      repartition: false
`)
	p, err := New(Config{Topology: top, Engine: stageone.New(top), Log: slog.New(slog.DiscardHandler), Metrics: metrics.New(),
		Partitioner: NewPartitioner(top), Stores: changelog.MemoryBuilder(), AssemblyStores: changelog.MemoryBuilder()})
	if err != nil {
		t.Fatal(err)
	}
	rep := top.Assemblies()[0].Assembly.RepartitionTopic
	if !p.IsDirect(rep) || p.as.isRepartition(rep) {
		t.Fatalf("%s: direct %v, polled as a repartition topic %v", rep, p.IsDirect(rep), p.as.isRepartition(rep))
	}
	got := p.withDirect(map[string][]int32{"orders": {1, 4}, "payments": {4, 5}})
	want := map[string][]int32{"orders": {1, 4}, "payments": {4, 5}, rep: {1, 4, 5}}
	if len(got) != len(want) {
		t.Fatalf("withDirect = %v, want %v", got, want)
	}
	for k, v := range want {
		g := slices.Clone(got[k])
		slices.Sort(g)
		if !slices.Equal(g, v) {
			t.Fatalf("withDirect[%s] = %v, want %v", k, g, v)
		}
	}
	if p.withDirect(nil) != nil {
		t.Fatal("withDirect(nil) is not nil (all)")
	}
	for _, part := range []int32{1, 2} {
		tk := &assemblyTask{part: part, st: changelog.NewMemory()}
		if _, err := p.as.GetOrBuild(rep, part, func() (*assemblyTask, error) { return tk, nil }, func(*assemblyTask) {}); err != nil {
			t.Fatal(err)
		}
	}
	p.Drop(map[string][]int32{"payments": {1}})
	if _, ok := p.as.Get(rep, 1); ok {
		t.Fatal("the task of revoked input partition 1 was kept")
	}
	if _, ok := p.as.Get(rep, 2); !ok {
		t.Fatal("the task of input partition 2, still assigned, was dropped")
	}
}
