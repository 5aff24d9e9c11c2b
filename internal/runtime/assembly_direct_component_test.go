package runtime

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/observe"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stagetwo"
	"github.com/sidestream/sidestream/internal/tasks"
	"github.com/sidestream/sidestream/internal/wire"
)

// assembleOrdersVariant compiles examples/assemble-orders.yaml under its
// own application id and topic prefix, with the assembly's repartition
// set and each replacement applied (each must match).
func assembleOrdersVariant(t *testing.T, brokers []string, app, repartition string, repl ...[2]string) *plan.Plan {
	t.Helper()
	b, err := os.ReadFile("../../examples/assemble-orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	repl = append([][2]string{
		{"      duplicate_topic: orders.duplicate\n", "      duplicate_topic: orders.duplicate\n      repartition: " + repartition + "\n"},
		{"application_id: assemble-orders", "application_id: " + app},
		{"topic: orders.", "topic: " + app + "."},
	}, repl...)
	y := string(b)
	for _, r := range repl {
		if !strings.Contains(y, r[0]) {
			t.Fatalf("examples/assemble-orders.yaml: %q not found", r[0])
		}
		y = strings.ReplaceAll(y, r[0], r[1])
	}
	top := compileAt(t, app+".yaml", y, brokers, "../../examples/")
	if got := top.Assemblies()[0].Assembly.Direct; got != (repartition == "false") {
		t.Fatalf("repartition: %s compiled to Direct = %v", repartition, got)
	}
	return top
}

// assemblyResults are an assembly route's committed assembled, incomplete
// and duplicate records, by output topic (without the application's
// prefix) and key, each key's values sorted.
func assemblyResults(t *testing.T, brokers []string, top *plan.Plan) map[string][]string {
	t.Helper()
	ar := top.Assemblies()[0]
	c := ar.Assembly.Spec
	out := map[string][]string{}
	for _, r := range readCommitted(t, brokers, ar.Topic, c.IncompleteTopic, c.DuplicateTopic) {
		k := strings.TrimPrefix(r.Topic, top.Settings.ApplicationID+".") + "|" + string(r.Key)
		out[k] = append(out[k], string(r.Value))
	}
	for _, vs := range out {
		slices.Sort(vs)
	}
	return out
}

// waitAssemblyDone waits until the runs have consumed inputs input records
// and every part is through the assembly, none open.
func waitAssemblyDone(t *testing.T, top *plan.Plan, inputs int, rs ...*running) {
	t.Helper()
	var ms []*metrics.Metrics
	for _, r := range rs {
		ms = append(ms, r.p.Metrics())
	}
	for deadline := time.Now().Add(2 * time.Minute); !assemblyDone(top, ms, inputs); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s not done: %+v", top.Settings.ApplicationID, ms[len(ms)-1].Snapshot())
		}
	}
}

// waitCaughtUp waits until the runs have consumed inputs input records and
// every part they took is through the assembly.
func waitCaughtUp(t *testing.T, top *plan.Plan, inputs int, rs ...*running) {
	t.Helper()
	rt := top.Assemblies()[0]
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		var in, written, staged float64
		for _, r := range rs {
			m := r.p.Metrics()
			in += testutil.ToFloat64(m.Consumed.WithLabelValues("order-parts"))
			written += testutil.ToFloat64(m.RouteIn.WithLabelValues(rt.Name))
			staged += testutil.ToFloat64(m.Repartitioned.WithLabelValues(rt.Assembly.RepartitionTopic))
		}
		if int(in) >= inputs && staged >= written {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v of %d inputs, %v of %v parts assembled", top.Settings.ApplicationID, in, inputs, staged, written)
		}
	}
}

// TestAssemblyDirectEqualsRepartitioned: over parts keyed by the order id,
// the assembly with repartition: false (run in the input partition's
// task; no repartition topic), stopped and started again halfway so its
// state is restored from the changelog, writes exactly the assembled,
// incomplete and duplicate records of the same route with its
// repartition topic; a part written to a partition its id does not hash
// to goes to dirty with its reason instead of splitting the order.
func TestAssemblyDirectEqualsRepartitioned(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(6, "order-parts"))
	brokers := c.ListenAddrs()
	parts, exp := gen.OrderParts(11, 3000, 6)
	const flushParts = 2 * 6 // gen.OrderParts ends with a complete order per partition
	body, flush := parts[:len(parts)-flushParts], parts[len(parts)-flushParts:]
	half := len(body) / 2

	direct := assembleOrdersVariant(t, brokers, "direct", "false")
	rep := assembleOrdersVariant(t, brokers, "rep", "true")

	// The misrouted order: its lines part on the id's partition, its
	// customer part on another. Ten minutes before the flush: the direct
	// run expires it (customer missing), the repartitioned run completes it.
	const misID = "misrouted"
	idPart := stagetwo.KeyPartition(stagetwo.NewPartitioner(direct), "x", []byte(misID), 6)
	misTS := flush[0].TS - 600_000
	mis := []*kgo.Record{
		{Topic: "order-parts", Key: []byte(misID), Partition: idPart, Timestamp: time.UnixMilli(misTS),
			Value: fmt.Appendf(nil, `{"order_id":%q,"kind":"x","ts":%d,"items":1,"price":100,"qty":2}`, misID, misTS)},
		{Topic: "order-parts", Key: []byte(misID), Partition: (idPart + 1) % 6, Timestamp: time.UnixMilli(misTS + 1),
			Value: fmt.Appendf(nil, `{"order_id":%q,"kind":"y","ts":%d,"customer":"Mis","country":"de"}`, misID, misTS+1)},
	}
	exp.Complete[misID] = []string{"lines", "customer"} // in the repartitioned run
	inputs := len(parts) + len(mis)

	// Parts are fed in chunks, each taken in full before the next: the
	// repartitioned run's task clock (event time) is the largest of every
	// input partition's, so its results are the direct run's only while
	// no input partition runs a TTL ahead of another.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	ctx := context.Background()
	const chunk = 300 // 150 orders: 15s of event time, under the 30s TTL
	fed := 0
	feed := func(ps []gen.Part, runs ...[]*running) {
		for len(ps) > 0 {
			n := min(chunk, len(ps))
			produceParts(t, brokers, ps[:n])
			ps, fed = ps[n:], fed+n
			for _, rs := range runs {
				waitCaughtUp(t, rs[0].p.top, fed, rs...)
			}
		}
	}
	rt := direct.Assemblies()[0]
	d1 := start(t, direct, "d1", WithMaxPollRecords(500))
	r := start(t, rep, "r")
	feed(body[:half], []*running{d1}, []*running{r})
	d1.stop(t)
	if sumGauge(d1.p.Metrics(), rt.Name) == 0 {
		t.Fatal("no assembly open at the cut: the restore is not exercised")
	}
	d2 := start(t, direct, "d2")
	feed(body[half:], []*running{d1, d2}, []*running{r})
	if err := pcl.ProduceSync(ctx, mis...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fed += len(mis)
	feed(flush, []*running{d1, d2}, []*running{r})
	waitAssemblyDone(t, direct, inputs, d1, d2)
	waitAssemblyDone(t, rep, inputs, r)
	checkDirectTasks(t, d2.p, "order-parts", rt.Name, 6, func(ts observe.TaskStatus) *int64 { return ts.AssemblyClock })
	checkDirectAssemblyState(t, d2.p, rt, "flush-0")
	d2.stop(t)
	r.stop(t)
	for _, run := range []*running{d1, d2, r} {
		if s := run.p.Metrics().Snapshot(); !s.Conserved() {
			t.Fatalf("conservation: %+v", s)
		}
	}
	if n := testutil.ToFloat64(d2.p.Metrics().RestoredRecords.WithLabelValues(rt.Name)); n == 0 {
		t.Fatal("the second direct run restored no changelog records")
	}

	// No repartition topic for the direct route; its changelog exists.
	adm := kadm.NewClient(pcl)
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tds.Has(rt.Assembly.RepartitionTopic) || !tds.Has(rt.Assembly.ChangelogTopic) {
		t.Fatalf("direct route: repartition topic exists %v, changelog exists %v",
			tds.Has(rt.Assembly.RepartitionTopic), tds.Has(rt.Assembly.ChangelogTopic))
	}
	if !tds.Has(rep.Assemblies()[0].Assembly.RepartitionTopic) {
		t.Fatal("the repartitioned route has no repartition topic")
	}

	checkAssemblyOutputs(t, brokers, rep, exp)
	got, want := assemblyResults(t, brokers, direct), assemblyResults(t, brokers, rep)
	// The misrouted order: incomplete (customer missing) in the direct
	// run, complete in the repartitioned one.
	misIn, misAs := got["incomplete|"+misID], want["assembled|"+misID]
	if len(misIn) != 1 || !strings.Contains(misIn[0], `"missing":["customer"]`) || len(misAs) != 1 {
		t.Fatalf("misrouted order: direct incomplete %q, repartitioned assembled %q", misIn, misAs)
	}
	delete(got, "incomplete|"+misID)
	delete(want, "assembled|"+misID)
	var dirty []string
	for _, d := range readCommitted(t, brokers, direct.Dirty.Topic) {
		if wire.String(d.Headers, wire.HeaderReason) == wire.ReasonNotPartitionedByID {
			dirty = append(dirty, string(d.Value))
		}
	}
	if len(dirty) != 1 || !strings.Contains(dirty[0], `"kind":"y"`) || !strings.Contains(dirty[0], misID) {
		t.Fatalf("direct run: dirty records with reason %s %q, want the misrouted customer part", wire.ReasonNotPartitionedByID, dirty)
	}
	var counts [3]int
	for k := range want {
		switch {
		case strings.HasPrefix(k, "assembled|"):
			counts[0]++
		case strings.HasPrefix(k, "incomplete|"):
			counts[1]++
		case strings.HasPrefix(k, "duplicate|"):
			counts[2]++
		}
	}
	if counts[0] == 0 || counts[1] == 0 || counts[2] == 0 {
		t.Fatalf("want assembled, incomplete and duplicate records; got %v", counts)
	}
	for k, v := range got {
		if !slices.Equal(v, want[k]) {
			t.Errorf("%s: direct %q, repartitioned %q", k, v, want[k])
		}
	}
	for k, v := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("%s only in the repartitioned run: %q", k, v)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("direct = repartitioned: %d assembled, %d incomplete, %d duplicate ids; misrouted part dirty", counts[0], counts[1], counts[2])
}

// checkDirectAssemblyState queries a completed id the way GET /state does:
// found in the task of the id's input partition.
func checkDirectAssemblyState(t *testing.T, p *Processor, rt *plan.RouteNode, id string) {
	t.Helper()
	v, err := p.StateReaders()[rt.Name].ReadState(context.Background(), id)
	if err != nil {
		t.Fatalf("state of %s: %v", id, err)
	}
	av, ok := v.(*stagetwo.AssemblyStateView)
	if !ok || !av.Held || !av.Completed || av.Partition != stagetwo.KeyPartition(stagetwo.NewPartitioner(p.top), "x", []byte(id), 6) {
		t.Fatalf("state of %s: %+v", id, v)
	}
}

// TestAssemblyDirectProcessingTTL: a direct assembly on processing time
// expires its open assemblies from the commit loop, with no later part.
func TestAssemblyDirectProcessingTTL(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(6, "order-parts"))
	brokers := c.ListenAddrs()
	top := assembleOrdersVariant(t, brokers, "ttl", "false",
		[2]string{"ttl: 30s", "ttl: 1s"}, [2]string{"time: event ", "time: processing "})
	var parts []gen.Part
	for i := range 12 {
		id := fmt.Sprintf("o-%d", i)
		parts = append(parts, gen.Part{Topic: "order-parts", Key: []byte(id),
			Value: fmt.Appendf(nil, `{"order_id":%q,"kind":"x","ts":1790000000000,"items":1,"price":1,"qty":1}`, id)})
	}
	produceParts(t, brokers, parts)
	r := start(t, top, "a")
	name := top.Assemblies()[0].Name
	for deadline := time.Now().Add(time.Minute); testutil.ToFloat64(r.p.Metrics().Assemblies.WithLabelValues(name, metrics.ResultExpired)) < 12; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not expired: %+v", r.p.Metrics().Snapshot())
		}
	}
	r.stop(t)
	if s := r.p.Metrics().Snapshot(); !s.Conserved() {
		t.Fatalf("conservation: %+v", s)
	}
	inc := readCommitted(t, brokers, top.Assemblies()[0].Assembly.Spec.IncompleteTopic)
	if len(inc) != 12 {
		t.Fatalf("%d incomplete records, want 12", len(inc))
	}
}

// TestAssemblyDirectChangelogLoss: records deleted from a direct
// assembly's changelog between two runs, or the topic deleted (the next
// start recreates it empty; the witness is in the input offsets'
// metadata), stop the next run's task, and /readyz names the changelog.
func TestAssemblyDirectChangelogLoss(t *testing.T) {
	for _, how := range []string{wire.LossRecordsDeleted, wire.LossChangelogEmpty} {
		t.Run(how, func(t *testing.T) {
			c := newCluster(t, kfake.SeedTopics(6, "order-parts"))
			brokers := c.ListenAddrs()
			top := assembleOrdersVariant(t, brokers, "loss", "false")
			rt := top.Assemblies()[0]
			parts, _ := gen.OrderParts(3, 600, 6)
			produceParts(t, brokers, parts)
			a := start(t, top, "a")
			waitAssemblyDone(t, top, len(parts), a)
			a.stop(t)

			loseChangelog(t, brokers, rt.Assembly.ChangelogTopic, how)

			more, _ := gen.OrderParts(4, 200, 6)
			produceParts(t, brokers, more)
			b := start(t, top, "b", WithLossRecheck(500*time.Millisecond))
			for deadline := time.Now().Add(time.Minute); testutil.ToFloat64(b.p.Metrics().ChangelogLoss.WithLabelValues(rt.Name, how, "fail")) == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no loss reported: %+v", b.p.Metrics().Snapshot())
				}
			}
			ok, why := b.p.Ready()
			if ok || !strings.Contains(why, "changelog "+rt.Assembly.ChangelogTopic+" partition ") {
				t.Fatalf("readyz = %v %q", ok, why)
			}
			if n := testutil.ToFloat64(b.p.Metrics().Repartitioned.WithLabelValues(rt.Assembly.RepartitionTopic)); n != 0 {
				t.Fatalf("the direct assembly committed %v parts past a changelog loss", n)
			}
			b.stop(t)
		})
	}
}

const twoInputsYAML = `application_id: two-inputs
guarantee: exactly_once
inputs:
  - topic: orders
  - topic: payments
routing:
  match: first
  default: drop
routes:
  - name: paid
    topic: orders.paid
    assemble:
      id: order_id
      parts:
        - {name: order, source: orders}
        - {name: payment, source: payments}
      ttl: 1h
      incomplete_topic: orders.unpaid
      repartition: false
dirty:
  topic: orders.dirty
`

func twoInputs(t *testing.T, brokers []string) *plan.Plan {
	t.Helper()
	return compileAt(t, "two-inputs.yaml", twoInputsYAML, brokers, "")
}

// TestAssemblyDirectTwoInputs: a direct assembly whose parts come from two
// inputs keyed by the same id: partition i of both feeds task i (built
// once, though both partitions may be processed at the same time: eight
// callers at once get one task from one restore), and every order is
// assembled exactly once. Inputs of unequal partition
// counts are refused at start.
func TestAssemblyDirectTwoInputs(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(6, "orders", "payments"))
	brokers := c.ListenAddrs()
	top := twoInputs(t, brokers)
	const n = 2000
	var parts []gen.Part
	for i := range n {
		id := fmt.Sprintf("ord-%d", i)
		parts = append(parts,
			gen.Part{Topic: "orders", Key: []byte(id), Value: fmt.Appendf(nil, `{"order_id":%q,"amount":%d}`, id, i)},
			gen.Part{Topic: "payments", Key: []byte(id), Value: fmt.Appendf(nil, `{"order_id":%q,"paid":true}`, id)})
	}
	produceParts(t, brokers, parts)
	r := start(t, top, "a", WithWorkers(4), WithMaxPollRecords(200))
	for deadline := time.Now().Add(time.Minute); testutil.ToFloat64(r.p.Metrics().Assemblies.WithLabelValues("paid", metrics.ResultCompleted)) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not assembled: %+v", r.p.Metrics().Snapshot())
		}
	}
	r.stop(t)
	if s := r.p.Metrics().Snapshot(); !s.Conserved() || s.Dirty != 0 {
		t.Fatalf("conservation or dirty: %+v", s)
	}
	seen := map[string]int{}
	for _, rec := range readCommitted(t, brokers, "orders.paid", "orders.unpaid", "orders.dirty") {
		if rec.Topic != "orders.paid" {
			t.Fatalf("record on %s: %s", rec.Topic, rec.Value)
		}
		seen[string(rec.Key)]++
	}
	for i := range n {
		if id := fmt.Sprintf("ord-%d", i); seen[id] != 1 {
			t.Fatalf("order %s assembled %d times", id, seen[id])
		}
	}
	if len(seen) != n {
		t.Fatalf("%d ids assembled, want %d", len(seen), n)
	}

	// Partition i of both inputs asking for task i at once build it once:
	// one restore, one task for every caller.
	ar := top.Assemblies()[0]
	q := restorer(t, top, brokers)
	const callers = 8
	tasks := make([]tasks.Task, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { tasks[i], errs[i] = q.stage.Task(context.Background(), ar.Assembly.RepartitionTopic, 2) })
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || tasks[i] != tasks[0] {
			t.Fatalf("caller %d: task %p (err %v), caller 0: %p", i, tasks[i], errs[i], tasks[0])
		}
	}
	// The records one restore reads, from a build with no one racing it.
	once := restorer(t, top, brokers)
	if _, err := once.stage.Task(context.Background(), ar.Assembly.RepartitionTopic, 2); err != nil {
		t.Fatal(err)
	}
	restored := func(p *Processor) float64 {
		return testutil.ToFloat64(p.Metrics().RestoredRecords.WithLabelValues(ar.Name))
	}
	if restored(once) == 0 || restored(q) != restored(once) {
		t.Fatalf("%d callers restored %v records, one restore reads %v", callers, restored(q), restored(once))
	}

	// Unequal partition counts: refused before the first poll.
	c2 := newCluster(t, kfake.SeedTopics(6, "orders"), kfake.SeedTopics(3, "payments"))
	p, err := New(twoInputs(t, c2.ListenAddrs()), WithLogger(testLogger()), WithInstanceID("b"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Run(ctx); err == nil || !strings.Contains(err.Error(), "co-partitioning is broken") {
		t.Fatalf("Run with 6 and 3 partitions: %v, want a co-partitioning error", err)
	}
}

// TestAssemblyDirectCoPartitionedAssignment: with two members, partition
// i of every input is assigned to the same member, so one task holds an
// id's parts from both inputs.
func TestAssemblyDirectCoPartitionedAssignment(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(6, "orders", "payments"))
	brokers := c.ListenAddrs()
	top := twoInputs(t, brokers)
	a := start(t, top, "a")
	b := start(t, top, "b")
	held := func(r *running) map[string][]int32 {
		out := map[string][]int32{}
		for _, ts := range r.p.Tasks() {
			if !ts.Direct {
				out[ts.Topic] = append(out[ts.Topic], ts.Partition)
			}
		}
		for _, ps := range out {
			slices.Sort(ps)
		}
		return out
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		ha, hb := held(a), held(b)
		if len(ha["orders"])+len(hb["orders"]) == 6 && len(ha["payments"])+len(hb["payments"]) == 6 && len(ha["orders"]) > 0 && len(hb["orders"]) > 0 {
			if !slices.Equal(ha["orders"], ha["payments"]) || !slices.Equal(hb["orders"], hb["payments"]) {
				t.Fatalf("inputs not co-assigned: a %v, b %v", ha, hb)
			}
			t.Logf("a %v, b %v", ha, hb)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no settled assignment: a %v, b %v", ha, hb)
		}
	}
}
