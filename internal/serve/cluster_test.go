package serve

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/live"
)

// TestGroupMembers: the cluster view's members are the group's, each
// named by its client id (the router's instance id), addressed through
// the owner URL template, with the partitions the group assigned it.
func TestGroupMembers(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, id := range []string{"router-a", "router-b"} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ClientID(id),
			kgo.ConsumerGroup("app"), kgo.ConsumeTopics("logs"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		go func() {
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
	}
	g := &groupMembers{group: "app", brokers: c.ListenAddrs(), tmpl: "http://{instance}.peers:8080"}
	defer g.Close()
	for {
		ms, err := g.Members(ctx)
		var parts []int32
		for _, m := range ms {
			parts = append(parts, m.Assigned["logs"]...)
		}
		slices.Sort(parts)
		if err == nil && len(ms) == 2 && slices.Equal(parts, []int32{0, 1, 2, 3}) {
			slices.SortFunc(ms, func(a, b live.Member) int { return strings.Compare(a.Instance, b.Instance) })
			for i, want := range []string{"router-a", "router-b"} {
				if ms[i].Instance != want || ms[i].URL != "http://"+want+".peers:8080" || len(ms[i].Assigned["logs"]) != 2 || ms[i].Host == "" {
					t.Fatalf("member %d: %+v", i, ms[i])
				}
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the group never showed both members with all partitions: %+v %v", ms, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
