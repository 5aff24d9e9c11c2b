package demo

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sidestream/sidestream/examples"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/serve"
)

// TestWrittenMetricEqualsReadBack runs every shipped example the demo
// runs and reads each output topic back read_committed itself: the
// sidestream_route_records_written_total count of every topic (the
// verdict's "written") must equal the records found there, window
// results, assemblies, late, incomplete, duplicate and dirty records
// alike.
func TestWrittenMetricEqualsReadBack(t *testing.T) {
	names, err := fs.Glob(examples.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, name := range names {
		if strings.HasSuffix(name, ".test.yaml") {
			continue
		}
		ran++
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("../../examples", name)
			cfg, err := config.LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			top, err := plan.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(cfg.Topics.Partitions, inputTopics(cfg)...))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			brokers := cluster.ListenAddrs()
			o := Options{Config: path, Records: 2000, Seed: 1, Quiet: true, Generator: "auto",
				Serve: serve.Options{Listen: "127.0.0.1:0", TxnTimeout: time.Minute, Build: testBuild}}
			if err := o.check(); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if err := runOnDefaults(o, cfg, path, brokers, &out, &errb); err != nil {
				t.Fatalf("demo: %v\n%s\n%s", err, out.String(), errb.String())
			}
			res := verdictOf(t, out.String())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			recs, err := readback.ReadCommitted(ctx, brokers, top.OutputTopics()...)
			if err != nil {
				t.Fatal(err)
			}
			read := map[string]int64{}
			for _, r := range recs {
				read[r.Topic]++
			}
			var total int64
			for _, topic := range top.OutputTopics() {
				got, ok := res.Written[topic]
				if !ok || got != read[topic] {
					t.Errorf("topic %s: written metric %d (present %v), read back %d", topic, got, ok, read[topic])
				}
				total += got
			}
			if total == 0 || len(res.Written) != len(top.OutputTopics()) {
				t.Errorf("written %v for the output topics %v", res.Written, top.OutputTopics())
			}
		})
	}
	if ran < 5 {
		t.Fatalf("ran %d examples, want every shipped one", ran)
	}
}

// runOnDefaults is Run on a cluster the test owns (it reads it back after).
func runOnDefaults(o Options, cfg *config.Config, path string, brokers []string, stdout, stderr *bytes.Buffer) error {
	o.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	inputs, err := readInputs(cfg, o.Inputs)
	if err != nil {
		return err
	}
	return runOn(context.Background(), o, cfg, path, brokers, inputs, stdout, stderr)
}
