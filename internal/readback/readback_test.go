package readback

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeletedPartitionIsNotAwaited: a partition whose every record the
// broker deleted (old timestamps under time retention, DeleteRecords) has
// an end above zero and nothing to read; the read-back returns what is
// left instead of waiting for records that will never come.
func TestDeletedPartitionIsNotAwaited(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := range int32(2) {
		for range 3 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: p, Value: []byte{byte('a' + p)}}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: "t", Partition: 1, At: 3})
	if resp, err := kadm.NewClient(cl).DeleteRecords(ctx, del); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	rs, err := ReadCommitted(ctx, c.ListenAddrs(), "t")
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if len(rs) != 3 {
		t.Fatalf("read %d records, want the 3 of partition 0", len(rs))
	}
	for _, r := range rs {
		if r.Partition != 0 {
			t.Fatalf("read a record of partition %d, whose records were deleted", r.Partition)
		}
	}
}
