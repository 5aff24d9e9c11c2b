package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTombstoneForwardComponent: through a broker, in a transaction, the
// forwarded tombstone is read back read_committed as a null value with
// its key, after the record it deletes.
func TestTombstoneForwardComponent(t *testing.T) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	top := compileAt(t, "users.yaml", `application_id: users
inputs: [{topic: logs}]
event_time: {format: kafka}
routing: {default: drop}
routes: [{name: users, topic: users.clean, tombstones: forward}]
dirty: {topic: users.dirty}
`, brokers, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for _, r := range []*kgo.Record{
		{Key: []byte("u1"), Value: []byte(`{"name":"ada"}`)},
		{Key: []byte("u1")}, // the delete
		{Value: nil},        // a keyless tombstone: dirty
	} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	a := start(t, top, "a")
	waitConsumed(t, a.p.Metrics(), 3, time.Minute)
	a.stop(t)
	got := readCommitted(t, brokers, "users.clean", "users.dirty")
	var clean []*kgo.Record
	dirty := 0
	for _, r := range got {
		if r.Topic == "users.dirty" {
			dirty++
			continue
		}
		clean = append(clean, r)
	}
	if dirty != 1 || len(clean) != 2 || string(clean[0].Key) != "u1" || clean[0].Value == nil ||
		string(clean[1].Key) != "u1" || clean[1].Value != nil {
		t.Fatalf("read back %d dirty and %+v", dirty, clean)
	}
	if s := a.p.Metrics().Snapshot(); !s.Conserved() || s.Routed != 2 || s.Dirty != 1 {
		t.Fatalf("counts %+v", s)
	}
}
