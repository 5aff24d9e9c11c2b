package itest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/sideroute"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestRedriveKill9ExactlyOnce fills a dirty topic, then runs router redrive
// into the input topic and kills it with SIGKILL twice while a transaction
// of it is open (checked with the process frozen, so the kill cannot race
// a commit), each time restarting it, until a run finishes. A read_committed reader
// of the target must see every dirty record exactly once, each marked
// with its origin, and the ledger must name each origin once.
func TestRedriveKill9ExactlyOnce(t *testing.T) {
	const n = 8000
	s := newScenario(t, "redrive", 0)
	dirty := s.topicOf["dirty"]
	ledger := sideroute.LedgerTopic(s.app)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if resp, err := s.adm.CreateTopic(ctx, 3, 1, nil, dirty); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", dirty, err, resp.Err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = s.adm.DeleteTopics(c, ledger, dirty)
	})
	var recs []*kgo.Record
	for i := range n {
		id := "d-" + strconv.Itoa(i)
		recs = append(recs, &kgo.Record{Topic: dirty, Key: []byte(id),
			Value: fmt.Appendf(nil, `{"id":%q,"ts":%d,"level":"TRACE","service":"s","message":"m"}`, id, 1790000000000+int64(i)),
			Headers: []kgo.RecordHeader{
				{Key: wire.HeaderReason, Value: []byte("schema_violation")},
				{Key: wire.HeaderStage, Value: []byte("schema")},
				{Key: wire.HeaderTopic, Value: []byte(s.input)},
			}})
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// router tail on the real broker: the last 6 records in total (of
	// the 3 partitions, by timestamp), reasons decoded.
	tail, err := exec.Command(routerBin, "tail", "--config", s.config, "--brokers", strings.Join(s.brokers, ","),
		"--route", "dirty", "--lines", "6", "--format", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("router tail: %v\n%s", err, tail)
	}
	lines := strings.Split(strings.TrimSpace(string(tail)), "\n")
	if len(lines) != 6 || strings.Count(string(tail), `"reason":"schema_violation","reasons"`) != 6 || strings.Count(string(tail), `"stage":"schema"`) != 6 {
		t.Fatalf("router tail --lines 6 printed %d records:\n%s", len(lines), tail)
	}

	// runRedrive starts run i; its exit status arrives on the channel.
	runRedrive := func(i int) (*exec.Cmd, *bytes.Buffer, chan error) {
		cmd := exec.Command(routerBin, "redrive", "--config", s.config, "--brokers", strings.Join(s.brokers, ","),
			"--from", "dirty", "--to", s.input, "--txn-records", "200", "--quiet", "--run-id", "run-"+strconv.Itoa(i))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = append(os.Environ(), "SIDESTREAM_BROKERS=")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, &out, done
	}
	// ends lists the target's end offsets: read_uncommitted (the high
	// watermark, aborted and open records included) or read_committed
	// (the last stable offset).
	ends := func(committed bool) map[int32]int64 {
		list := s.adm.ListEndOffsets
		if committed {
			list = s.adm.ListCommittedOffsets
		}
		lo, err := list(ctx, s.input)
		if err != nil {
			return nil
		}
		m := map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) { m[o.Partition] = o.Offset })
		return m
	}
	written := func() (n int64) {
		for _, o := range ends(false) {
			n += o
		}
		return n
	}
	// open reports whether a transaction has records in the target's log
	// and no marker yet.
	open := func() bool {
		stable := ends(true)
		for p, hw := range ends(false) {
			if s, ok := stable[p]; ok && hw > s {
				return true
			}
		}
		return false
	}
	// killOpen waits for run's records to reach the target, freezes the
	// process and, if its transaction stays open while it is frozen (so no
	// end-transaction request is on its way), kills it: that transaction
	// must then be aborted. A transaction that completes while frozen was
	// already being committed; the process is thawed and tried again.
	// It reports false when the run ended first.
	killOpen := func(cmd *exec.Cmd, done chan error) bool {
		for target := written() + int64(50+s.rng.IntN(300)); ; target = written() + 1 {
			for written() < target {
				select {
				case err := <-done:
					done <- err
					return false
				case <-time.After(time.Millisecond):
				}
			}
			if cmd.Process.Signal(syscall.SIGSTOP) != nil {
				return false
			}
			// Frozen, the process sends nothing: a transaction that
			// stays open for 2 s has no end on its way (a loaded broker
			// may take a while to write the markers of one that has).
			stillOpen := open()
			for frozen := time.Now(); stillOpen && time.Since(frozen) < 2*time.Second; stillOpen = open() {
				time.Sleep(100 * time.Millisecond)
			}
			if stillOpen {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				err := <-done
				if cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
					return true
				}
				done <- err
				return false
			}
			_ = cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	// Two runs are killed with a transaction open; the third must finish.
	kills := 0
	for i := 0; ; i++ {
		cmd, out, done := runRedrive(i)
		if kills < 2 && killOpen(cmd, done) {
			kills++
			continue
		}
		if err := <-done; err != nil {
			t.Fatalf("final redrive: %v\n%s", err, out.String())
		}
		t.Logf("final run: %s", strings.TrimSpace(out.String()))
		break
	}
	if kills == 0 {
		t.Fatalf("no run was killed with a transaction open: the test proved nothing")
	}

	got := s.readTopics([]string{s.input}, true, 2*time.Minute)
	seen := map[string]int{}
	for _, r := range got {
		var origin string
		for _, h := range r.Headers {
			if h.Key == wire.HeaderRedriveOrigin {
				origin = string(h.Value)
			}
		}
		if origin == "" || !strings.HasPrefix(origin, dirty+"/") {
			t.Fatalf("record without a redrive origin on %s: %q", s.input, r.Key)
		}
		seen[origin]++
	}
	dups := 0
	for _, c := range seen {
		if c > 1 {
			dups++
		}
	}
	uncommitted := len(s.readTopics([]string{s.input}, false, 2*time.Minute))
	ledgerRecs := s.readTopics([]string{ledger}, true, time.Minute)
	t.Logf("scenario=redrive-kill9 dirty=%d kills=%d committed=%d distinct=%d dups=%d written_incl_aborted=%d ledger=%d",
		n, kills, len(got), len(seen), dups, uncommitted, len(ledgerRecs))
	if len(got) != n || len(seen) != n || dups != 0 {
		t.Fatalf("read_committed target: %d records, %d distinct origins, %d duplicated; want %d once each", len(got), len(seen), dups, n)
	}
	if uncommitted <= n {
		t.Fatalf("no kill left an aborted transaction behind (%d records written in all): the test proved nothing", uncommitted)
	}
	if len(ledgerRecs) != n {
		t.Fatalf("ledger holds %d entries, want %d", len(ledgerRecs), n)
	}
}
