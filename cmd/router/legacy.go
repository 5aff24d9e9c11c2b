package main

// What the topotest files (leaving package main for a package of their own)
// still call in package main; this file goes once they have moved.

import (
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/serve"
)

func loadTopology(path string, o config.Overrides, plaintext bool) (*plan.Plan, error) {
	return serve.LoadTopology(path, o, plaintext)
}

func inputTopics(cfg *config.Config) []string {
	var out []string
	for _, in := range cfg.Inputs {
		out = append(out, in.Topic)
	}
	return out
}

func inputConsumed(top *plan.Plan, m *metrics.Metrics) float64 {
	var n float64
	for _, t := range top.InputTopics() {
		n += testutil.ToFloat64(m.Consumed.WithLabelValues(t))
	}
	return n
}

// testFile reads a topology test file for validate.
func testFile(path string) (string, int, error) {
	tf, err := readTestFile(path)
	if err != nil {
		return "", 0, err
	}
	return tf.Topology, len(tf.Tests), nil
}
