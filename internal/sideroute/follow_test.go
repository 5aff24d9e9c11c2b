package sideroute

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/wire"
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

// TestLateWindowsRFC3339: a late record's missed windows read as times.
func TestLateWindowsRFC3339(t *testing.T) {
	r := wire.Decode([]kgo.RecordHeader{
		{Key: wire.HeaderLateRoute, Value: []byte("revenue")},
		{Key: wire.HeaderLateWins, Value: []byte("[1790000000000,1790000060000),[1790000060000,1790000120000)")},
	})
	got := strings.Join(r.Lines(), "\n")
	want := "missed window [2026-09-21T14:13:20.000Z, 2026-09-21T14:14:20.000Z),[2026-09-21T14:14:20.000Z, 2026-09-21T14:15:20.000Z)"
	if !strings.Contains(got, want) {
		t.Errorf("lines %q lack %q", got, want)
	}
	if r.LateWindows != "[1790000000000,1790000060000),[1790000060000,1790000120000)" {
		t.Errorf("the decoded header changed: %q", r.LateWindows)
	}
}

// TestReadLastInTotal: Last counts records of the topic, not of each
// partition: the last three by timestamp of three partitions come, oldest
// first.
func TestReadLastInTotal(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := time.UnixMilli(1790000000000)
	var recs []*kgo.Record
	for i := range 9 {
		recs = append(recs, &kgo.Record{Topic: "t", Partition: int32(i % 3), Value: []byte{byte('a' + i)}, Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := Read(context.Background(), ReadOptions{Brokers: c.ListenAddrs(), Topic: "t", Last: 3}, func(r *kgo.Record) error {
		got += string(r.Value)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got != "ghi" {
		t.Fatalf("Last 3 of 9 records on 3 partitions read %q, want ghi", got)
	}
}
