package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTailFollowOnlyNew: router tail --lines 0 --follow prints only the
// records written after it started.
func TestTailFollowOnlyNew(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "logs", "logs.dirty"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("logs.dirty"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(`{"n":"old"}`)}, &kgo.Record{Value: []byte(`{"n":"old"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- realMain([]string{"tail", "--config", example, "--brokers", strings.Join(c.ListenAddrs(), ","),
			"--route", "dirty", "--lines", "0", "--follow", "--format", "json"}, &out, &errb)
	}()
	for i, deadline := 0, time.Now().Add(time.Minute); !strings.Contains(out.String(), `"n":"new`); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no new record printed within a minute: %s %s", out.String(), errb.String())
		}
		select {
		case code := <-done:
			t.Fatalf("tail ended with %d: %s", code, errb.String())
		default:
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, `{"n":"new-%d"}`, i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // pace the writes, not a wait for a condition
	}
	interruptSelf(t) // tail listens for it before it reads
	if code := <-done; code != 0 {
		t.Errorf("tail exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "old") {
		t.Errorf("an old record was printed:\n%s", out.String())
	}
}
