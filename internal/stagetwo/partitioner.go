package stagetwo

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/plan"
)

// partitioner writes changelog records to the partition of their task and
// everything else with franz-go's default (Kafka-compatible key hashing).
type partitioner struct {
	manual      map[string]bool
	repartition map[string]bool // window repartition topics: marks go to a named partition
	def         kgo.Partitioner
}

// NewPartitioner is the producer's partitioner of a topology's records:
// state queries and direct routes locate keys with it.
func NewPartitioner(t *plan.Plan) kgo.Partitioner {
	_, cl := t.InternalTopics()
	p := partitioner{manual: map[string]bool{}, repartition: map[string]bool{}, def: kgo.UniformBytesPartitioner(64<<10, true, true, nil)}
	for _, r := range t.Windows() {
		p.repartition[r.Window.RepartitionTopic] = true
	}
	for _, c := range cl {
		p.manual[c] = true
	}
	return p
}

func (p partitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if p.manual[topic] {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	if p.repartition[topic] {
		return markAware{kgo.StickyKeyPartitioner(nil).ForTopic(topic)}
	}
	return p.def.ForTopic(topic)
}

// markAware writes marks to the partition they name and every other
// record of a window repartition topic by its key's hash (Kafka's
// murmur2, what state queries use to locate a key).
type markAware struct{ keyed kgo.TopicPartitioner }

func (markAware) RequiresConsistency(*kgo.Record) bool { return true }

func (m markAware) Partition(r *kgo.Record, n int) int {
	if IsMark(r) {
		return int(r.Partition)
	}
	return m.keyed.Partition(r, n)
}
