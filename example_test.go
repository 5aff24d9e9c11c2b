package sidestream_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream"
)

// The topology routes payments by a Go function of the embedding
// program: isVIP decides which merchants are VIPs.
const payments = `application_id: embed-example
inputs: [{topic: payments}]
routing: {default: drop}
routes:
  - name: vip
    topic: payments.vip
    when: isVIP(merchant)
  - name: rest
    topic: payments.rest
    when: not isVIP(merchant)
dirty: {topic: payments.dirty}
`

// Example embeds the router with a Go function used in a route's when,
// runs it on an in-process Kafka and reads what each route received.
func Example() {
	vips := map[string]bool{"m-1": true, "m-7": true}
	isVIP := func(params ...any) (any, error) {
		return vips[params[0].(string)], nil
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "payments"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	r, err := sidestream.Parse("payments.yaml", []byte(payments),
		sidestream.WithFunction("isVIP", isVIP, new(func(string) bool)),
		sidestream.WithBrokers(cluster.ListenAddrs()...),
		sidestream.WithInstanceID("example"),
		sidestream.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	produce(cluster.ListenAddrs(), "payments", []string{"m-1", "m-2", "m-7", "m-3", "m-1", "m-9"})
	got := readAll(cluster.ListenAddrs(), 6, r.Topic("vip"), r.Topic("rest"))
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
	for _, route := range r.Routes() {
		fmt.Printf("%s: %s\n", route, strings.Join(got[r.Topic(route)], " "))
	}
	// Output:
	// vip: m-1 m-1 m-7
	// rest: m-2 m-3 m-9
}

func produce(brokers []string, topic string, merchants []string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	for i, m := range merchants {
		v := fmt.Sprintf(`{"id":%d,"merchant":%q}`, i, m)
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			panic(err)
		}
	}
}

// readAll reads the topics read_committed until n records arrived (a
// minute at most), and returns each topic's merchants, sorted.
func readAll(brokers []string, n int, topics ...string) map[string][]string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := map[string][]string{}
	for seen := 0; seen < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			panic(fmt.Sprintf("read %d of %d records", seen, n))
		}
		fs.EachRecord(func(rec *kgo.Record) {
			var m string
			if i := strings.Index(string(rec.Value), `"merchant":"`); i >= 0 {
				m = string(rec.Value[i+12:])
				m = m[:strings.IndexByte(m, '"')]
			}
			got[rec.Topic] = append(got[rec.Topic], m)
			seen++
		})
	}
	for _, v := range got {
		slices.Sort(v)
	}
	return got
}
