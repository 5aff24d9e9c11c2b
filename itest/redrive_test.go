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

	"github.com/sidestream/sidestream/processor"
	"github.com/sidestream/sidestream/sideroute"
)

// TestRedriveKill9ExactlyOnce fills a dirty topic, then runs router redrive
// into the input topic and kills it with SIGKILL several times mid-run,
// each time restarting it, until a run finishes. A read_committed reader
// of the target must see every dirty record exactly once, each marked
// with its origin, and the ledger must name each origin once.
func TestRedriveKill9ExactlyOnce(t *testing.T) {
	const n = 4000
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
				{Key: processor.HeaderReason, Value: []byte("schema_violation")},
				{Key: processor.HeaderStage, Value: []byte("schema")},
				{Key: processor.HeaderTopic, Value: []byte(s.input)},
			}})
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// router tail on the real broker: the last 2 records of each of the
	// 3 partitions, reasons decoded.
	tail, err := exec.Command(routerBin, "tail", "--config", s.config, "--brokers", strings.Join(s.brokers, ","),
		"--route", "dirty", "--lines", "2", "--format", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("router tail: %v\n%s", err, tail)
	}
	lines := strings.Split(strings.TrimSpace(string(tail)), "\n")
	if len(lines) != 6 || strings.Count(string(tail), `"reason":"schema_violation","reasons"`) != 6 || strings.Count(string(tail), `"stage":"schema"`) != 6 {
		t.Fatalf("router tail --lines 2 printed %d records:\n%s", len(lines), tail)
	}

	runRedrive := func(i int) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(routerBin, "redrive", "--config", s.config, "--brokers", strings.Join(s.brokers, ","),
			"--from", "dirty", "--to", s.input, "--txn-records", "200", "--quiet", "--run-id", "run-"+strconv.Itoa(i))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = append(os.Environ(), "SIDESTREAM_BROKERS=")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	// written counts the target's records, aborted ones included.
	written := func() int64 {
		lo, err := s.adm.ListEndOffsets(ctx, s.input)
		if err != nil {
			return 0
		}
		var n int64
		lo.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	kills := 0
	for i := 0; ; i++ {
		cmd, out := runRedrive(i)
		if i < 4 {
			// Kill it once it has written some records past what is
			// there: mid-transaction, as transactions hold 200 records.
			target := written() + int64(50+s.rng.IntN(300))
			for deadline := time.Now().Add(time.Minute); written() < target && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err == nil {
				_ = cmd.Wait()
				if cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
					kills++
					continue
				}
			}
			t.Logf("run %d ended before the kill: %s", i, out.String())
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("final redrive: %v\n%s", err, out.String())
		}
		t.Logf("final run: %s", strings.TrimSpace(out.String()))
		break
	}
	if kills == 0 {
		t.Fatalf("no run was killed mid-redrive: the test proved nothing")
	}

	got := s.readTopics([]string{s.input}, true, 2*time.Minute)
	seen := map[string]int{}
	for _, r := range got {
		var origin string
		for _, h := range r.Headers {
			if h.Key == processor.HeaderRedriveOrigin {
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
