package processor

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/topology"
)

// TestHashPartitionIsKafkas: the partition a direct assembly checks each
// part's ID against is Kafka's default (murmur2) key partition, which a
// producer with that partitioner wrote it to, and the one a state query
// looks the ID up in.
func TestHashPartitionIsKafkas(t *testing.T) {
	const rep = "app-assembled-repartition"
	top := &topology.Topology{Routes: []*topology.RouteNode{{Name: "assembled",
		Assembly: &topology.AssemblyNode{RepartitionTopic: rep, ChangelogTopic: "app-assembled-changelog", Direct: true}}}}
	part := newPartitioner(top)
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
		if q := keyPartition(part, rep, key, n); q != got {
			t.Fatalf("key %q, %d partitions: %d, a state query %d", key, n, got, q)
		}
	})
}
