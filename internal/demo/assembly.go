package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/wire"
)

// partsFor generates the parts of n orders of an assembly example: the
// three-topic order/payment/shipment stream when the topology reads
// payments, else the seed-002 stream of X and Y parts.
func partsFor(top *plan.Plan, n int, seed uint64) ([]gen.Part, gen.AssemblyExpect) {
	if slices.Contains(top.InputTopics(), "payments") {
		return gen.OrderPaymentShipment(seed, n)
	}
	parts, exp := gen.OrderParts(seed, n, int(top.Settings.Topics.Partitions))
	for i := range parts {
		parts[i].Topic = top.InputTopics()[0]
	}
	return parts, exp
}

// partsOfRecords generates whole orders, the fewest whose parts number at
// least records (an order's parts are never cut: the verdict checks each
// order's outcome).
func partsOfRecords(top *plan.Plan, records int, seed uint64) ([]gen.Part, gen.AssemblyExpect) {
	lo, hi := 1, max(1, records) // every order has at least one part
	for lo < hi {
		mid := (lo + hi) / 2
		if p, _ := partsFor(top, mid, seed); len(p) >= records {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return partsFor(top, lo, seed)
}

// generateParts writes the parts of about records input records (whole
// orders), at rate records per second (0: as fast as possible).
func generateParts(ctx context.Context, brokers []string, top *plan.Plan, records int, rate float64, seed uint64, prog *progress) (int64, gen.AssemblyExpect, error) {
	parts, exp := partsOfRecords(top, records, seed)
	recs := make([]*kgo.Record, len(parts))
	for i, p := range parts {
		recs[i] = &kgo.Record{Topic: p.Topic, Key: p.Key, Value: p.Value}
		if p.TS > 0 {
			recs[i].Timestamp = time.UnixMilli(p.TS)
		}
	}
	n, err := produceAll(ctx, brokers, recs, rate, prog)
	return n, exp, err
}

// checkAssemblies reads the assembly outputs back read_committed and
// checks them against the generator's expectations (none for records of
// --input: exp.Complete is nil) and the router's counts. It returns the
// counts read and the problems found.
func checkAssemblies(ctx context.Context, brokers []string, top *plan.Plan, s metrics.Snapshot, exp gen.AssemblyExpect) (map[string]int64, []string) {
	out := map[string]int64{}
	var problems []string
	ar := top.Assemblies()[0]
	c := ar.Assembly.Spec
	topics := []string{ar.Topic, c.IncompleteTopic}
	if c.DuplicateTopic != "" {
		topics = append(topics, c.DuplicateTopic)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	recs, err := readback.ReadCommitted(ctx, brokers, topics...)
	if err != nil {
		return out, []string{"read back assemblies: " + err.Error()}
	}
	seen := map[string]bool{}
	optional := 0
	for _, r := range recs {
		if r.Topic == c.DuplicateTopic {
			out["duplicate"]++
			continue
		}
		var a struct {
			ID      string                     `json:"id"`
			Parts   map[string]json.RawMessage `json:"parts"`
			Missing []string                   `json:"missing"`
		}
		if err := json.Unmarshal(r.Value, &a); err != nil {
			problems = append(problems, fmt.Sprintf("assembly output %q is not JSON", r.Value))
			continue
		}
		if seen[r.Topic+"/"+a.ID] {
			problems = append(problems, fmt.Sprintf("id %s emitted twice on %s", a.ID, r.Topic))
		}
		seen[r.Topic+"/"+a.ID] = true
		oracle := exp.Complete != nil
		if r.Topic == ar.Topic {
			out["assembled"]++
			want, ok := exp.Complete[a.ID]
			if oracle && !ok {
				problems = append(problems, fmt.Sprintf("id %s assembled but not expected to complete", a.ID))
			}
			optional += max(len(a.Parts)-len(want), 0)
			continue
		}
		out["incomplete"]++
		want, ok := exp.Incomplete[a.ID]
		var hdr string
		for _, h := range r.Headers {
			if h.Key == wire.HeaderMissing {
				hdr = string(h.Value)
			}
		}
		if oracle && (!ok || !slices.Equal(a.Missing, want) || hdr != strings.Join(want, ",")) {
			problems = append(problems, fmt.Sprintf("id %s incomplete missing %v (header %q), expected %v", a.ID, a.Missing, hdr, want))
		}
	}
	if exp.Complete != nil {
		problems = append(problems, oracleProblems(out, optional, exp)...)
	}
	if float64(out["assembled"]) != s.Assemblies[metrics.ResultCompleted] || float64(out["incomplete"]) != s.Assemblies[metrics.ResultExpired] ||
		float64(out["duplicate"]) != s.AssemblyParts[metrics.PartCompleted] {
		problems = append(problems, fmt.Sprintf("read back %v, router counted %v and %v", out, s.Assemblies, s.AssemblyParts))
	}
	return out, problems
}

// oracleProblems compares the assembly counts read back with the parts
// generator's expectations.
func oracleProblems(out map[string]int64, optional int, exp gen.AssemblyExpect) []string {
	var problems []string
	if out["assembled"] != int64(len(exp.Complete)) || out["incomplete"] != int64(len(exp.Incomplete)) {
		problems = append(problems, fmt.Sprintf("assembled %d of %d expected, incomplete %d of %d expected",
			out["assembled"], len(exp.Complete), out["incomplete"], len(exp.Incomplete)))
	}
	if exp.Optional == 0 && out["duplicate"] != int64(exp.DuplicateRoute) {
		problems = append(problems, fmt.Sprintf("duplicate route %d, expected %d", out["duplicate"], exp.DuplicateRoute))
	}
	if exp.Optional > 0 && int64(optional)+out["duplicate"] != int64(exp.Optional) {
		problems = append(problems, fmt.Sprintf("optional parts: %d assembled + %d duplicate, expected %d", optional, out["duplicate"], exp.Optional))
	}
	return problems
}
