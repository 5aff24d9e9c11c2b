package itest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/wire"
)

// envRegistry names the real schema registry's Confluent-compatible base
// URL (scripts/registry.sh up prints it); without it the registry tests
// skip.
const envRegistry = "SIDESTREAM_IT_REGISTRY"

// avroVersion is one writer schema of the test's subject.
type avroVersion struct {
	id     int
	text   string
	schema avro.Schema
	extra  map[string]any // the fields it adds to version 1, with the values written
}

// avroScenario is a scenario over examples/logs-avro.yaml against the real
// registry: its input is Avro in the Confluent wire format, written by
// internal/gen's AvroLogs (hostile frames included), good records under
// several schema versions of the subject <input>-value.
type avroScenario struct {
	*scenario
	url      string
	reg      *sr.Client
	subject  string
	dirty    string
	gen      *gen.AvroLogs
	versions []avroVersion
	hostile  int
}

// newAvroScenario skips without a broker or a registry; otherwise it
// writes the Avro example topology with this test's names and the
// registry's URL, creates the input topic and registers versions 1 and 2
// of the log-event schema (2 adds a field with a default). No event is
// generated yet.
func newAvroScenario(t *testing.T, name string, capacity int) *avroScenario {
	t.Helper()
	if os.Getenv(envBrokers) == "" {
		t.Skipf("%s is not set: no real broker (scripts/kafka.sh up)", envBrokers)
	}
	url := os.Getenv(envRegistry)
	if url == "" {
		t.Skipf("%s is not set: no real schema registry (scripts/registry.sh up)", envRegistry)
	}
	base := newScenario(t, name, 0)
	prefix := base.app + "-avro"
	s, top := base.derivedRun("avro", "../examples/logs-avro.yaml", [][2]string{
		{"application_id: logs-avro\n", "application_id: " + prefix + "\n"},
		{"  - topic: logs-avro\n", "  - topic: " + base.input + "\n"},
		{"topic: logs-avro.", "topic: " + prefix + "."},
		{"  url: http://127.0.0.1:8081", "  url: " + url},
	})
	s.topicOf = map[string]string{"dirty": top.Dirty.Topic}
	for _, r := range top.Routes {
		s.topicOf[r.Name] = r.Topic
	}
	for kind, route := range gen.RouteOf {
		if _, ok := s.topicOf[route]; !ok {
			t.Fatalf("examples/logs-avro.yaml has no route %q (kind %s)", route, kind)
		}
	}
	s.events = make([]gen.Event, 0, capacity) // byID points into it: never reallocated
	s.byID = make(map[string]*gen.Event, capacity)
	// No kept-alive connection outlives the test (goleak in TestMain).
	reg, err := sr.NewClient(sr.URLs(url), sr.HTTPClient(&http.Client{
		Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
	}))
	if err != nil {
		t.Fatalf("registry client for %s: %v", url, err)
	}
	a := &avroScenario{scenario: s, url: url, reg: reg, subject: base.input + "-value", dirty: top.Dirty.Topic}
	s.idOf = a.recordID
	v1, err := os.ReadFile("../examples/schemas/log-event.avsc")
	if err != nil {
		t.Fatal(err)
	}
	a.register(string(v1), nil)
	a.register(string(v1), map[string]any{"zone": "z-1"})
	if a.gen, err = gen.NewAvroLogs(base.rng.Uint64(), a.versions[0].text, a.versions[0].id); err != nil {
		t.Fatal(err)
	}
	a.gen.HostileFraction = 0.03
	return a
}

// register adds a version of the subject: version 1's schema with the
// string fields of extra appended (each with its value as the default),
// through the registry's HTTP API.
func (a *avroScenario) register(v1 string, extra map[string]any) avroVersion {
	t := a.t
	t.Helper()
	text := v1
	if len(extra) > 0 {
		var doc map[string]any
		if err := json.Unmarshal([]byte(v1), &doc); err != nil {
			t.Fatal(err)
		}
		fields, _ := doc["fields"].([]any)
		for _, name := range slices.Sorted(maps.Keys(extra)) {
			fields = append(fields, map[string]any{"name": name, "type": "string", "default": extra[name]})
		}
		doc["fields"] = fields
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		text = string(b)
	}
	schema, err := avro.Parse(text)
	if err != nil {
		t.Fatalf("schema version %d: %v", len(a.versions)+1, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := a.reg.CreateSchema(ctx, a.subject, sr.Schema{Schema: text, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register version %d of %s at %s: %v", len(a.versions)+1, a.subject, a.url, err)
	}
	for _, v := range a.versions {
		if v.id == ss.ID {
			t.Fatalf("version %d of %s got the id %d of an earlier version", len(a.versions)+1, a.subject, ss.ID)
		}
	}
	v := avroVersion{id: ss.ID, text: text, schema: schema, extra: extra}
	a.versions = append(a.versions, v)
	t.Logf("registered %s version %d: schema id %d", a.subject, ss.Version, ss.ID)
	return v
}

// generate appends n events; each good one is written under the version
// pick returns (an index into versions), each hostile frame as the
// generator made it. The oracle counts follow.
func (a *avroScenario) generate(n int, pick func() int) {
	t := a.t
	for range n {
		if len(a.events) == cap(a.events) {
			t.Fatalf("more events than the scenario's capacity %d", cap(a.events))
		}
		ev := a.gen.Next()
		if _, bad := gen.ReasonOf[ev.Kind]; bad {
			a.hostile++
		} else if v := pick(); v > 0 {
			ev.Value = a.reencode(ev.Value, a.versions[v])
		}
		a.events = append(a.events, ev)
		e := &a.events[len(a.events)-1]
		a.byID[e.ID] = e
		a.want[a.topicOf[gen.RouteOf[e.Kind]]]++
	}
}

// reencode turns a good version-1 frame into the same record written
// with version v: decoded with version 1, v's fields added, encoded with
// v and framed with v's id.
func (a *avroScenario) reencode(frame []byte, v avroVersion) []byte {
	t := a.t
	var h sr.ConfluentHeader
	_, payload, err := h.DecodeID(frame)
	if err != nil {
		t.Fatalf("a good generated frame: %v", err)
	}
	rec := map[string]any{}
	if err := avro.Unmarshal(a.versions[0].schema, payload, &rec); err != nil {
		t.Fatalf("a good generated frame does not decode with version 1: %v", err)
	}
	for k, val := range v.extra {
		rec[k] = val
	}
	out, err := avro.Marshal(v.schema, rec)
	if err != nil {
		t.Fatalf("encode with schema id %d: %v", v.id, err)
	}
	framed, err := h.AppendEncode(nil, v.id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return append(framed, out...)
}

// verifyDirty reads the dirty topic read_committed: every record on it
// is a hostile frame of the generator's, with the generator's reason; it
// returns how many records carry a wrong reason or are good records.
func (a *avroScenario) verifyDirty() (wrongReason, good int) {
	t := a.t
	t.Helper()
	recs := a.readTopics([]string{a.dirty}, true, 2*time.Minute)
	for _, r := range recs {
		ev := a.byID[a.recordID(r.Key, r.Value)]
		if ev == nil {
			continue // counted as unknown by the tally
		}
		want, hostile := gen.ReasonOf[ev.Kind]
		if !hostile {
			good++
			if good <= 5 {
				t.Errorf("good event %s (%s) on dirty: reason %q", ev.ID, ev.Kind, headerValueOf(r.Headers, wire.HeaderReason))
			}
			continue
		}
		if got := headerValueOf(r.Headers, wire.HeaderReason); got != want {
			wrongReason++
			if wrongReason <= 5 {
				t.Errorf("hostile event %s (%s) on dirty with reason %q, want %q", ev.ID, ev.Kind, got, want)
			}
		}
	}
	if len(recs) != a.hostile {
		t.Errorf("dirty holds %d records, the generator wrote %d hostile frames", len(recs), a.hostile)
	}
	return wrongReason, good
}

func headerValueOf(hs []kgo.RecordHeader, key string) string {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// recordID is an output record's event id: the router passes a registry
// format's frames through, so a good record's id is its "id" field,
// decoded with the writer schema its frame names; a dirty frame that does
// not decode keeps its key, the id (gen.IDOf: a JSON value's id, else
// the key).
func (a *avroScenario) recordID(key, value []byte) string {
	var h sr.ConfluentHeader
	if id, payload, err := h.DecodeID(value); err == nil {
		for _, v := range a.versions {
			rec := map[string]any{}
			if v.id == id && avro.Unmarshal(v.schema, payload, &rec) == nil {
				if s, ok := rec["id"].(string); ok {
					return s
				}
			}
		}
	}
	return gen.IDOf(key, value)
}

// verifyBytes checks that every record read back is its input record's
// value, byte for byte: the router routes frames, it never re-encodes
// them. It returns how many differ.
func (a *avroScenario) verifyBytes(recs []outRec) int {
	altered := 0
	for _, r := range recs {
		if ev := a.byID[a.recordID(r.key, r.value)]; ev != nil && !bytes.Equal(ev.Value, r.value) {
			altered++
			if altered <= 5 {
				a.t.Errorf("%s on %s: the value differs from the input's", ev.ID, r.topic)
			}
		}
	}
	return altered
}

// kcatCheck reads every output topic with kcat (read_committed) and
// compares each topic's ids with the franz-go read-back.
func (a *avroScenario) kcatCheck(recs []outRec) (records, diff int) {
	t := a.t
	t.Helper()
	goIDs := map[string]map[string]int{}
	for _, r := range recs {
		if goIDs[r.topic] == nil {
			goIDs[r.topic] = map[string]int{}
		}
		goIDs[r.topic][a.recordID(r.key, r.value)]++
	}
	for _, tp := range a.outputs {
		k := map[string]int{}
		for _, kv := range a.kcatRecords(tp) {
			k[a.recordID(kv[0], kv[1])]++
		}
		for id, n := range k {
			records += n
			if goIDs[tp][id] != n {
				diff++
			}
		}
		for id := range goIDs[tp] {
			if _, ok := k[id]; !ok {
				diff++
			}
		}
		if got := sum(k); got != a.want[tp] {
			t.Errorf("kcat read %d records from %s, the oracle says %d", got, tp, a.want[tp])
		}
	}
	if diff > 0 {
		t.Errorf("kcat and the franz-go reader disagree on %d ids", diff)
	}
	return records, diff
}

// kcatRecords reads topic with kcat, read_committed, as key and value
// pairs. The values are binary frames, so each record is printed
// length-prefixed ("%K\t%k%S\t%s") rather than one a line.
func (s *scenario) kcatRecords(topic string) [][2][]byte {
	s.t.Helper()
	out := s.kcat(topic, "%K\t%k%S\t%s")
	var recs [][2][]byte
	for len(out) > 0 {
		var kv [2][]byte
		for i := range kv {
			n, rest, ok := cutLength(out)
			if !ok || n > len(rest) {
				s.t.Fatalf("kcat on %s: bad length-prefixed output after %d records: %q", topic, len(recs), firstBytes(out, 40))
			}
			kv[i], out = rest[:n], rest[n:]
		}
		recs = append(recs, kv)
	}
	return recs
}

// cutLength reads "N\t" off b.
func cutLength(b []byte) (int, []byte, bool) {
	num, rest, ok := bytes.Cut(b, []byte{'\t'})
	if !ok {
		return 0, nil, false
	}
	n, err := strconv.Atoi(string(num))
	return n, rest, err == nil && n >= 0
}

func firstBytes(b []byte, n int) []byte { return b[:min(n, len(b))] }

// TestRegistryKillLoop: 40,000 Avro log events against the real schema
// registry, good ones written under two versions of the subject (one
// adds a field) and 3% hostile frames (no magic byte, an unknown schema
// id, a truncated payload); the exactly-once router is killed with
// SIGKILL at random moments 4 times and restarted each time. Every
// output read read_committed (by franz-go and by kcat) holds each event
// exactly once on the oracle's route, every hostile frame is on dirty
// with the generator's reason and nothing else is.
func TestRegistryKillLoop(t *testing.T) {
	const n = 40_000
	a := newAvroScenario(t, "registry_kill_loop", n)
	a.generate(n, func() int { return a.rng.IntN(2) })
	a.killLoop(1500, 4)

	tl, aborted := a.verifyExactlyOnce()
	wrong, good := a.verifyDirty()
	recs := a.readBack(true, 2*time.Minute)
	altered := a.verifyBytes(recs)
	kcatRecords, diff := a.kcatCheck(recs)
	conserved := tl.records == n && tl.missing == 0 && tl.dups == 0 && tl.unknown == 0
	if !conserved {
		t.Errorf("conservation: %d events in, %d records out (%d missing, %d duplicates, %d unknown)",
			n, tl.records, tl.missing, tl.dups, tl.unknown)
	}
	a.report(tl, fmt.Sprintf("hostile=%d dirty_wrong_reason=%d good_on_dirty=%d altered=%d aborted_invisible=%d kcat_records=%d kcat_diff=%d conservation=%v",
		a.hostile, wrong, good, altered, aborted, kcatRecords, diff, conserved))
}

// registryControl runs scripts/registry.sh for the outage test, with the
// test's environment (so SIDESTREAM_REGISTRY_PORT and _DIR name the same
// registry as the script that started it). It first checks that the
// script manages the registry the test was given.
type registryControl struct {
	t   *testing.T
	url string
}

func newRegistryControl(t *testing.T, url string) *registryControl {
	t.Helper()
	c := &registryControl{t: t, url: url}
	if got := strings.TrimSpace(c.run("url")); strings.TrimRight(got, "/") != strings.TrimRight(url, "/") {
		t.Fatalf("scripts/registry.sh manages %s, but %s=%s: the outage test stops and starts the registry with the script, "+
			"so set SIDESTREAM_REGISTRY_PORT (and SIDESTREAM_REGISTRY_DIR) to the ones that started it", got, envRegistry, url)
	}
	// Whatever happens, the registry is running again for the tests after
	// this one.
	t.Cleanup(func() {
		if !c.answers() {
			c.run("start")
		}
	})
	return c
}

func (c *registryControl) run(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../scripts/registry.sh", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("scripts/registry.sh %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		c.t.Logf("scripts/registry.sh %s: %s", strings.Join(args, " "), msg)
	}
	return string(out)
}

// answers is whether GET /subjects answers 200.
func (c *registryControl) answers() bool {
	resp, err := httpc.Get(c.url + "/subjects")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// TestRegistryOutage: the real registry is stopped mid-run (scripts/
// registry.sh stop: its schemas are kept) right after a new version of
// the subject was registered, and the input written during the outage
// is under that version, which the router has never fetched. The
// router must wait: /readyz says not ready and names the registry,
// transactions abort (registry_unavailable), no good record reaches any
// output, dirty included. Once the registry is started again, the router
// becomes ready by itself and every event is on its route exactly once,
// the hostile frames on dirty with their reasons.
func TestRegistryOutage(t *testing.T) {
	const before, during = 8_000, 6_000
	a := newAvroScenario(t, "registry_outage", before+during)
	ctl := newRegistryControl(t, a.url)
	a.generate(before, func() int { return a.rng.IntN(2) })
	p := a.startProducerRange(0, before, 2000)
	r := a.startRouter("x", fastGroup...)
	p.wait(t, 2*time.Minute)
	a.waitCommittedSum(before, 3*time.Minute, r)
	r.waitReady(time.Minute)

	v3 := a.register(a.versions[1].text, map[string]any{"run": a.app}) // unique content: an id no router has seen
	ctl.run("stop")
	if ctl.answers() {
		t.Fatalf("the registry at %s still answers after scripts/registry.sh stop", a.url)
	}
	a.generate(during, func() int { return len(a.versions) - 1 })
	p = a.startProducerRange(before, before+during, 0)
	p.wait(t, 2*time.Minute)
	outage := a.duringOutage(r, v3)

	ctl.run("start")
	a.waitCommittedSum(before+during, 3*time.Minute, r)
	r.waitReady(2 * time.Minute)
	r.stop(40 * time.Second)

	tl, aborted := a.verifyExactlyOnce()
	wrong, good := a.verifyDirty()
	a.report(tl, fmt.Sprintf("hostile=%d dirty_wrong_reason=%d good_on_dirty=%d aborted_invisible=%d %s",
		a.hostile, wrong, good, aborted, outage))
}

// duringOutage checks the router while the registry is down: not ready,
// naming the registry; at least two registry_unavailable aborts (it
// retried); and no event written under v3 read back from any output.
func (a *avroScenario) duringOutage(r *router, v3 avroVersion) string {
	t := a.t
	t.Helper()
	var why string
	waitFor(t, 2*time.Minute, "/readyz not ready during the registry outage", func() (bool, string) {
		requireRunning(t, r)
		code, body := r.readyz()
		why = body
		return code == http.StatusServiceUnavailable, fmt.Sprintf("%d %s", code, body)
	})
	if !strings.Contains(why, "schema registry") || !strings.Contains(why, a.url) {
		t.Errorf("/readyz during the outage: %q, want it to name the schema registry %s", why, a.url)
	}
	var aborts float64
	waitFor(t, 2*time.Minute, "two registry_unavailable aborts", func() (bool, string) {
		requireRunning(t, r)
		aborts = r.metric(t, metrics.NameAborts, `reason="registry_unavailable"`)
		return aborts >= 2, fmt.Sprintf("%v aborts", aborts)
	})
	if code, body := r.readyz(); code == http.StatusOK {
		t.Errorf("/readyz 200 while the registry is down: %s", body)
	}
	// Nothing under the new version can have been decoded: none of it is
	// on any output yet (the hostile frames of the outage may be).
	var h sr.ConfluentHeader
	leaked := 0
	for _, rec := range a.readBack(true, 2*time.Minute) {
		ev := a.byID[a.recordID(rec.key, rec.value)]
		if ev == nil {
			continue
		}
		if id, _, err := h.DecodeID(ev.Value); err == nil && id == v3.id {
			if _, hostile := gen.ReasonOf[ev.Kind]; !hostile {
				leaked++
			}
		}
	}
	if leaked > 0 {
		t.Errorf("%d events written under schema id %d (not fetched before the outage) were output while the registry was down", leaked, v3.id)
	}
	t.Logf("during the outage: /readyz %q, %v registry_unavailable aborts", why, aborts)
	return fmt.Sprintf("outage_aborts=%v outage_leaked=%d", aborts, leaked)
}
