package changelog_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
)

// restoreRig is one kfake broker with a compacted changelog topic of one
// partition, a producer to fill it and the admin client Restore lists
// offsets with.
type restoreRig struct {
	brokers []string
	cl      *kgo.Client
	adm     *kadm.Client
	topic   string
}

func newRestoreRig(t testing.TB) *restoreRig {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	r := &restoreRig{brokers: c.ListenAddrs(), topic: "test-changelog"}
	r.cl, err = kgo.NewClient(kgo.SeedBrokers(r.brokers...), kgo.DefaultProduceTopic(r.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cl.Close)
	r.adm = kadm.NewClient(r.cl)
	if _, err := r.adm.CreateTopic(context.Background(), 1, 1, map[string]*string{"cleanup.policy": new("compact")}, r.topic); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *restoreRig) produce(t testing.TB, recs ...*kgo.Record) {
	t.Helper()
	if err := r.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// source is a Source over the rig's partition whose findings are
// collected into *found and answered by decide (nil: go on).
func (r *restoreRig) source(found *[]changelog.Finding, decide func(changelog.Finding) error) changelog.Source {
	return changelog.Source{
		Admin: r.adm, ClientOpts: []kgo.Opt{kgo.SeedBrokers(r.brokers...)},
		Topic: r.topic, Partition: 0, Began: time.Now(), MarkKey: []byte("mark"),
		OnFinding: func(_ context.Context, f changelog.Finding) error {
			*found = append(*found, f)
			if decide != nil {
				return decide(f)
			}
			return nil
		},
	}
}

func kinds(fs []changelog.Finding) []changelog.FindingKind {
	var out []changelog.FindingKind
	for _, f := range fs {
		out = append(out, f.Kind)
	}
	return out
}

// TestRestoreFacts: a full read applies every record, tombstones delete,
// and the facts name the offsets; nothing is a finding.
func TestRestoreFacts(t *testing.T) {
	r := newRestoreRig(t)
	r.produce(t, &kgo.Record{Key: []byte("a"), Value: []byte("1")}, &kgo.Record{Key: []byte("b"), Value: []byte("2")},
		&kgo.Record{Key: []byte("a")}) // a tombstone
	var found []changelog.Finding
	st := changelog.NewMemory()
	f, err := changelog.Restore(context.Background(), r.source(&found, nil), st)
	if err != nil {
		t.Fatal(err)
	}
	if f.Records != 3 || f.From != 0 || f.End != 3 || f.LogStart != 0 || !f.Read || !f.Full {
		t.Fatalf("facts %+v, want 3 records read from 0 to 3, full", f)
	}
	if _, ok, _ := st.Get([]byte("a")); ok || st.Len() != 1 {
		t.Fatalf("store holds %d keys (a present: %v), want only b", st.Len(), ok)
	}
	if len(found) != 0 {
		t.Fatalf("findings %v on a plain full read", kinds(found))
	}
}

// TestRestoreEmpty: an empty partition is a finding whose answer is the
// restore's.
func TestRestoreEmpty(t *testing.T) {
	r := newRestoreRig(t)
	var found []changelog.Finding
	stop := errors.New("stop")
	f, err := changelog.Restore(context.Background(), r.source(&found, func(changelog.Finding) error { return stop }), changelog.NewMemory())
	if !errors.Is(err, stop) || !slices.Equal(kinds(found), []changelog.FindingKind{changelog.Empty}) || f.Read {
		t.Fatalf("empty partition: %v, findings %v, facts %+v", err, kinds(found), f)
	}
}

// TestRestoreCheckpointPastEnd: a checkpoint past the end is told before
// the wipe; stopping leaves the local state as it was, going on wipes it
// and reads everything.
func TestRestoreCheckpointPastEnd(t *testing.T) {
	r := newRestoreRig(t)
	r.produce(t, &kgo.Record{Key: []byte("k"), Value: []byte("v")})
	pb, err := changelog.OpenPebble(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	for i := range 5 {
		if err := pb.Set(fmt.Appendf(nil, "local%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := pb.Commit(100, time.Now()); err != nil {
		t.Fatal(err)
	}
	var found []changelog.Finding
	stop := errors.New("stop")
	if _, err := changelog.Restore(context.Background(), r.source(&found, func(changelog.Finding) error { return stop }), pb); !errors.Is(err, stop) {
		t.Fatalf("restore over a checkpoint past the end, stopped: %v", err)
	}
	if !slices.Equal(kinds(found), []changelog.FindingKind{changelog.CheckpointPastEnd}) || pb.Len() != 5 {
		t.Fatalf("stopped at %v: the store holds %d keys, want its 5 untouched", kinds(found), pb.Len())
	}
	found = nil
	f, err := changelog.Restore(context.Background(), r.source(&found, nil), pb)
	if err != nil {
		t.Fatal(err)
	}
	want := []changelog.FindingKind{changelog.CheckpointPastEnd, changelog.Wipe}
	if !slices.Equal(kinds(found), want) || found[1].Reason != "past_end" || !found[1].HadState {
		t.Fatalf("findings %+v, want %v with reason past_end", found, want)
	}
	if f.Full || f.Records != 1 || pb.Len() != 1 {
		t.Fatalf("accepted loss: facts %+v, %d keys; want 1 record read, not a full read", f, pb.Len())
	}
	if off, ok := pb.Checkpoint(); !ok || off != 1 {
		t.Fatalf("checkpoint %d (%v) after the read, want 1", off, ok)
	}
}

// TestRestoreRecordsDeleted: a full read of a partition whose log start
// moved reports it with the last mark read, before the checkpoint.
func TestRestoreRecordsDeleted(t *testing.T) {
	r := newRestoreRig(t)
	r.produce(t, &kgo.Record{Key: []byte("gone"), Value: []byte("1")}, &kgo.Record{Key: []byte("mark"), Value: []byte("old")},
		&kgo.Record{Key: []byte("k"), Value: []byte("2")}, &kgo.Record{Key: []byte("mark"), Value: []byte("new")})
	deleted, err := r.adm.DeleteRecords(context.Background(), kadm.Offsets{r.topic: {0: {At: 1}}})
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	pb, err := changelog.OpenPebble(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	var found []changelog.Finding
	stop := errors.New("stop")
	f, err := changelog.Restore(context.Background(), r.source(&found, func(f changelog.Finding) error {
		if f.Kind == changelog.RecordsDeleted {
			return stop
		}
		return nil
	}), pb)
	if !errors.Is(err, stop) {
		t.Fatalf("restore of a partition with records deleted: %v", err)
	}
	last := found[len(found)-1]
	if last.Kind != changelog.RecordsDeleted || last.LogStart != 1 || last.End != 4 || !last.MarkSeen || string(last.Mark) != "new" {
		t.Fatalf("findings %+v, want records deleted (log start 1, end 4) with the last mark", found)
	}
	if f.Records != 3 || f.From != 1 {
		t.Fatalf("facts %+v, want 3 records read from 1", f)
	}
	if _, ok := pb.Checkpoint(); ok {
		t.Fatal("a read whose loss stopped the restore was checkpointed")
	}
}

// TestRestoreEndsWithCtx: a restore waiting for an open transaction ends
// when its context does.
func TestRestoreEndsWithCtx(t *testing.T) {
	r := newRestoreRig(t)
	txn, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...), kgo.DefaultProduceTopic(r.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("open"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(context.Background(), &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var found []changelog.Finding
	go func() {
		_, err := changelog.Restore(ctx, r.source(&found, nil), changelog.NewMemory())
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("restore returned while a transaction was open: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("restore ended with %v, want the context's end", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("restore did not end within 30s of its context")
	}
}

// BenchmarkRestore reads one changelog partition of 200,000 window-state
// records (distinct keys shaped like the window operator's: a 24-byte
// key, a 30-byte value) into a fresh store, as a task does on
// assignment, read_committed. The broker is kfake in this process, so
// its cost is in the figure. records/s is the restore rate.
func BenchmarkRestore(b *testing.B) { benchRestore(b, 200_000) }

// BenchmarkRestore1M is BenchmarkRestore at 1,000,000 entries, for how
// restore grows with the state (docs/benchmarks.md, "How cost grows"):
// s/M is seconds per million entries, heap-MiB the heap held after a GC
// with the restored store open (the memory store's entries; Pebble's
// memtable and caches; kfake's copy of the changelog is in both), and
// peak-rss-growth-MiB how far the restore raised the process's peak
// resident memory above where it stood before (resetPeakRSS: the store,
// the fetched batches in flight, the GC's headroom and Pebble's memory
// outside the Go heap; not kfake's log, loaded before). Not run in CI:
//
//	go test ./internal/changelog -run '^$' -bench 'Restore1M' -benchtime 3x
func BenchmarkRestore1M(b *testing.B) { benchRestore(b, 1_000_000) }

// resetPeakRSS returns the process's resident KiB after a GC that hands
// freed memory back, and resets its peak (VmHWM) to it (Linux's
// clear_refs 5), so that VmHWM after a restore less this is what the
// restore itself raised the process's resident memory by: the store, the
// records in flight and the GC's headroom, not the rig's kfake log.
func resetPeakRSS(b *testing.B) int {
	b.Helper()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS (%v): not Linux?", err)
	}
	return procStatusKB(b, "VmRSS:")
}

// procStatusKB reads one "Name: N kB" line of /proc/self/status.
func procStatusKB(b *testing.B, name string) int {
	b.Helper()
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(st)) {
		if v, ok := strings.CutPrefix(line, name); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				b.Fatalf("%s: %v", strings.TrimSpace(line), err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", name)
	return 0
}

func benchRestore(b *testing.B, n int) {
	r := newRestoreRig(b)
	ctx := context.Background()
	val := make([]byte, 30)
	for i := range n {
		key := fmt.Appendf(nil, "w%015d", i%1000) // a group key, then a window start
		key = binary.BigEndian.AppendUint64(key, uint64(i))
		r.cl.Produce(ctx, &kgo.Record{Key: key, Value: val}, nil)
	}
	if err := r.cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	for _, store := range []string{"memory", "pebble"} {
		b.Run(store, func(b *testing.B) {
			total := 0
			var restoring time.Duration // the restores alone, not the GC after
			for b.Loop() {
				var st changelog.Store = changelog.NewMemory()
				if store == "pebble" {
					var err error
					if st, err = changelog.OpenPebble(b.TempDir()); err != nil {
						b.Fatal(err)
					}
				}
				var found []changelog.Finding
				rss0 := resetPeakRSS(b)
				t0 := time.Now()
				f, err := changelog.Restore(ctx, r.source(&found, nil), st)
				restoring += time.Since(t0)
				b.ReportMetric(float64(procStatusKB(b, "VmHWM:")-rss0)/1024, "peak-rss-growth-MiB")
				if err != nil || f.Records != n || st.Len() != n {
					b.Fatalf("restored %d records into %d keys, want %d: %v", f.Records, st.Len(), n, err)
				}
				total += f.Records
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
				_ = st.Close()
			}
			elapsed := restoring.Seconds()
			b.ReportMetric(float64(total)/elapsed, "records/s")
			b.ReportMetric(elapsed/float64(total)*1e6, "s/M")
		})
	}
}
