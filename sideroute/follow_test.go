package sideroute

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReadFollowOnlyNew: Last 0 with Follow (router tail --lines 0
// --follow) skips every record already written and prints the new ones.
func TestReadFollowOnlyNew(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 5 {
		produce(t, c.ListenAddrs(), &kgo.Record{Topic: "t", Partition: int32(i % 2), Value: []byte("old")})
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- Read(ctx, ReadOptions{Brokers: c.ListenAddrs(), Topic: "t", Last: 0, Follow: true}, func(r *kgo.Record) error {
			got <- string(r.Value)
			return nil
		})
	}()
	// Read may not have taken the ends yet: write new records until one
	// arrives; none of the old ones may.
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		produce(t, c.ListenAddrs(), &kgo.Record{Topic: "t", Value: fmt.Appendf(nil, "new-%d", i)})
		select {
		case g := <-got:
			if g == "old" {
				t.Fatalf("an old record was printed")
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Read after cancel: %v", err)
			}
			close(got)
			for g := range got {
				if g == "old" {
					t.Fatalf("an old record was printed")
				}
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no new record within a minute")
		}
	}
}
