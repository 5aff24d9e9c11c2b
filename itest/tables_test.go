package itest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const tablesYAML = `application_id: APP
inputs:
  - topic: INPUT
event_time:
  field: ts
  format: epoch_ms
routing:
  match: first
  default: other
routes:
  - name: vip
    topic: APP.vip
    when: 'lookup("merchants", merchant)?.tier == "vip"'
  - name: other
    topic: APP.other
dirty:
  topic: APP.dirty
tables:
  - name: merchants
    topic: APP.merchants
    key: id
    mode: as_of
    time: since
    history: 24h
`

// TestTablesAsOfAcrossKill: merchants change tier while payments flow;
// the router is killed with SIGKILL twice and restarted. Every payment
// must be written exactly once (read_committed), to the route the
// merchant's version valid at its event time says. Each version is
// written to the table topic well ahead of the payments it applies to
// (docs/lookup-tables.md, what a lookup promises across a crash).
func TestTablesAsOfAcrossKill(t *testing.T) {
	s := newScenario(t, "tables", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	merchants := s.app + ".merchants"
	if _, err := s.adm.CreateTopic(ctx, 3, -1, map[string]*string{"cleanup.policy": new("compact"), "min.compaction.lag.ms": new("86400000")}, merchants); err != nil {
		t.Fatal(err)
	}
	s.outputs = []string{s.app + ".vip", s.app + ".other", s.app + ".dirty", merchants}
	y := strings.NewReplacer("APP", s.app, "INPUT", s.input).Replace(tablesYAML)
	s.config = filepath.Join(s.dir, "tables.yaml")
	if err := os.WriteFile(s.config, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	const n, ms, ahead, nMerchants = 3000, 1000, 200, 10
	t0 := time.Now().Add(-2 * time.Hour).UnixMilli()
	// history[m] is merchant m's versions (since, vip) in time order.
	history := make([][]struct {
		since int64
		vip   bool
	}, nMerchants)
	version := func(m int, since int64, vip bool) *kgo.Record {
		history[m] = append(history[m], struct {
			since int64
			vip   bool
		}{since, vip})
		tier := map[bool]string{true: "vip", false: "basic"}[vip]
		return &kgo.Record{Topic: merchants, Key: fmt.Appendf(nil, "m-%d", m), Value: fmt.Appendf(nil, `{"id":"m-%d","tier":"%s","since":%d}`, m, tier, since)}
	}
	for m := range nMerchants {
		if err := s.cl.ProduceSync(ctx, version(m, t0-ms, m%2 == 0)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	a := s.startRouter("a")
	killAt := map[int]bool{n / 3: true, 2 * n / 3: true}
	for i := range n {
		var recs []*kgo.Record
		if i%20 == 0 {
			// A version valid from payment i+ahead's time on.
			m := s.rng.IntN(nMerchants)
			last := history[m][len(history[m])-1]
			recs = append(recs, version(m, max(t0+int64(i+ahead)*ms, last.since), !last.vip))
		}
		recs = append(recs, &kgo.Record{Topic: s.input, Key: fmt.Appendf(nil, "p-%d", i),
			Value: fmt.Appendf(nil, `{"id":"p-%d","merchant":"m-%d","ts":%d}`, i, (i*7)%nMerchants, t0+int64(i)*ms+ms/2)})
		if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if killAt[i] {
			a.waitReady(2 * time.Minute)
			a.kill9()
			a = a.restart()
		}
	}
	a.waitReady(2 * time.Minute)
	want := func(i int) string {
		m, ts := (i*7)%nMerchants, t0+int64(i)*ms+ms/2
		vip := false
		for _, v := range history[m] {
			if v.since <= ts {
				vip = v.vip
			}
		}
		return map[bool]string{true: s.app + ".vip", false: s.app + ".other"}[vip]
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		recs := s.readTopics(s.outputs[:3], true, time.Minute)
		got := map[string]string{}
		dup := ""
		for _, r := range recs {
			var p struct{ ID string }
			if err := json.Unmarshal(r.Value, &p); err != nil {
				t.Fatalf("%s: %s", r.Topic, r.Value)
			}
			if _, seen := got[p.ID]; seen {
				dup = p.ID
			}
			got[p.ID] = r.Topic
		}
		if dup != "" {
			t.Fatalf("payment %s written twice", dup)
		}
		if len(got) == n {
			bad := 0
			for i := range n {
				if w := want(i); got[fmt.Sprintf("p-%d", i)] != w {
					bad++
					if bad <= 5 {
						t.Errorf("p-%d (merchant m-%d) went to %s, its merchant's version says %s", i, (i*7)%nMerchants, got[fmt.Sprintf("p-%d", i)], w)
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d payments routed against the table version of their time", bad, n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d payments read back", len(got), n)
		}
	}
	a.stop(30 * time.Second)
}
