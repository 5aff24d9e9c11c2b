package assembly

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
)

var _ Store = changelog.Store(nil) // the changelog stores satisfy what the operator needs

// TestMain makes the property tests run 1,000 cases by default unless
// -rapid.checks is given.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		_ = flag.Set("rapid.checks", "1000")
	}
	os.Exit(m.Run())
}

// expectedValue renders an expected assembly's JSON independently of the
// operator's encoder.
func expectedValue(e expAsm) []byte {
	var b bytes.Buffer
	m := func(v any) []byte { j, _ := json.Marshal(v); return j }
	fmt.Fprintf(&b, `{"id":%s,"complete":%t,"parts":{`, m(e.ID), e.Complete)
	for i, n := range e.Order {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%s", m(n), e.Parts[n])
	}
	missing := e.Missing
	if missing == nil {
		missing = []string{}
	}
	fmt.Fprintf(&b, `},"missing":%s,"first_ms":%d,"last_ms":%d,"done_ms":%d}`, m(missing), e.First, e.Last, e.Done)
	return b.Bytes()
}

func toExp(t *rapid.T, a Assembly) expAsm {
	e := expAsm{ID: a.ID, Complete: a.Complete, Parts: map[string]string{}, Missing: a.Missing, First: a.First, Last: a.Last, Done: a.Done}
	for _, p := range a.Parts {
		e.Parts[p.Name] = string(p.Value)
		e.Order = append(e.Order, p.Name)
	}
	if want := expectedValue(e); !bytes.Equal(a.Value, want) {
		t.Fatalf("value of %q:\n got %s\nwant %s", a.ID, a.Value, want)
	}
	if !json.Valid(a.Value) {
		t.Fatalf("value of %q is not JSON: %s", a.ID, a.Value)
	}
	return e
}

func convert(t *rapid.T, out Output, err error) expOut {
	var re *RecordError
	if errors.As(err, &re) {
		return expOut{Err: true}
	}
	if err != nil {
		t.Fatalf("store error: %v", err)
	}
	e := expOut{Duplicate: out.Duplicate, DuplicatePart: out.DuplicatePart, Opened: out.Opened}
	if out.Assembled != nil {
		a := toExp(t, *out.Assembled)
		e.Assembled = &a
	}
	for _, a := range out.Incomplete {
		e.Incomplete = append(e.Incomplete, toExp(t, a))
	}
	return e
}

func genSpec(t *rapid.T) Spec {
	n := rapid.IntRange(1, 4).Draw(t, "nparts")
	s := Spec{
		TTL:        time.Duration(rapid.Int64Range(1, 40).Draw(t, "ttl")) * time.Millisecond,
		Retention:  time.Duration(rapid.SampledFrom([]int64{0, 0, 1, 10, 50}).Draw(t, "retention")) * time.Millisecond,
		Duplicates: rapid.SampledFrom([]DuplicateMode{LastWins, FirstWins}).Draw(t, "dups"),
	}
	for i := range n {
		s.Parts = append(s.Parts, fmt.Sprintf("p%d", i))
	}
	if n > 1 && rapid.Bool().Draw(t, "subset") {
		for _, p := range s.Parts {
			if rapid.Bool().Draw(t, "req") {
				s.Required = append(s.Required, p)
			}
		}
	}
	return s
}

// replica applies committed changes to a second store, as the changelog
// topic does: an operator rebuilt over it must continue identically.
type replica struct {
	live *changelog.Memory
	copy *changelog.Memory
}

func (r *replica) commit(t *rapid.T) {
	for _, c := range r.live.Changes() {
		if err := r.copy.Restore(c.Key, c.Value); err != nil {
			t.Fatal(err)
		}
	}
	r.live.ResetChanges()
}

// TestMatchesOracle drives the operator and the oracle with random
// streams (random arrival order and times, duplicate parts, missing
// parts, unknown parts, TTLs, retention, clock ticks, and restarts from
// the changelog) and requires exactly the same outputs.
func TestMatchesOracle(t *testing.T) {
	matchesOracle(t, func(m *changelog.Memory) Store { return m })
}

// TestMatchesOracleReusingStore is TestMatchesOracle over a store whose
// values are valid only until its next write, as an on-disk backend's
// may be (changelog.Store's contract): the operator must have used what it
// read before it writes, and what it hands out must not alias the store.
func TestMatchesOracleReusingStore(t *testing.T) {
	matchesOracle(t, func(m *changelog.Memory) Store { return &reusingStore{Memory: m} })
}

// reusingStore hands out values in one buffer it overwrites on every
// write.
type reusingStore struct {
	*changelog.Memory
	buf []byte
}

func (s *reusingStore) Get(key []byte) ([]byte, bool, error) {
	v, ok, err := s.Memory.Get(key)
	if !ok || err != nil {
		return v, ok, err
	}
	s.buf = append(s.buf[:0], v...)
	return s.buf[:len(v):len(v)], true, nil
}

func (s *reusingStore) scribble() {
	for i := range s.buf[:cap(s.buf)] {
		s.buf[:cap(s.buf)][i] = 0xfe
	}
}

func (s *reusingStore) Set(key, value []byte) error {
	s.scribble()
	return s.Memory.Set(key, value)
}

func (s *reusingStore) Delete(key []byte) error {
	s.scribble()
	return s.Memory.Delete(key)
}

func matchesOracle(t *testing.T, wrap func(*changelog.Memory) Store) {
	rapid.Check(t, func(t *rapid.T) {
		spec := genSpec(t)
		live := changelog.NewMemory()
		rep := &replica{live: live, copy: changelog.NewMemory()}
		op, err := New(spec, wrap(live))
		if err != nil {
			t.Fatal(err)
		}
		or := newOracle(spec)
		ids := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"1", "2", "3", "a", "b", "x\x00y", "order-9", `<q"\&>`, "\xff\u2028é"}), 1, 5, rapid.ID[string]).Draw(t, "ids")
		parts := append(append([]string{}, spec.Parts...), "unknown")
		now := rapid.Int64Range(-50, 50).Draw(t, "start")
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for i := range steps {
			now += rapid.Int64Range(-10, 15).Draw(t, "dt") // out of order too
			switch k := rapid.IntRange(0, 19).Draw(t, "kind"); {
			case k < 2:
				o, err := op.Advance(now)
				got := convert(t, o, err)
				want := expOut{Incomplete: or.advance(now)}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d advance(%d):\n got %+v\nwant %+v", i, now, got, want)
				}
			case k == 2:
				// Restart: a new operator over the changelog's copy.
				rep.commit(t)
				live = changelog.NewMemory()
				var err error
				rep.copy.Range(nil, func(k, v []byte) bool { err = live.Restore(k, v); return err == nil })
				if err != nil {
					t.Fatal(err)
				}
				rep.live = live
				if op, err = New(spec, wrap(live)); err != nil {
					t.Fatalf("rebuild: %v", err)
				}
			default:
				id := rapid.SampledFrom(ids).Draw(t, "id")
				part := rapid.SampledFrom(parts).Draw(t, "part")
				v := fmt.Sprintf(`{"n":%d}`, rapid.IntRange(0, 9).Draw(t, "v"))
				o, err := op.Process(id, part, now, []byte(v))
				got := convert(t, o, err)
				want := or.process(id, part, now, v)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d process(%q,%q,%d,%s):\n got %+v\nwant %+v", i, id, part, now, v, got, want)
				}
			}
			if op.Open() != len(or.open) {
				t.Fatalf("step %d: open %d, oracle %d", i, op.Open(), len(or.open))
			}
			if rapid.IntRange(0, 4).Draw(t, "commit") == 0 {
				rep.commit(t)
			}
		}
		// The state query agrees with the oracle for every ID.
		for _, id := range ids {
			h, ok, err := op.Held(id)
			if err != nil {
				t.Fatal(err)
			}
			a, open := or.open[id]
			until, done := or.done[id]
			if ok != (open || done) || h.Open != open || h.Completed != done {
				t.Fatalf("held %q: %+v ok=%v; oracle open=%v done=%v", id, h, ok, open, done)
			}
			if open && (len(h.Parts) != len(a.parts) || h.Deadline != a.deadline || h.First != a.first) {
				t.Fatalf("held %q: %+v; oracle %+v", id, h, a)
			}
			if done && h.RetainedUntil != until {
				t.Fatalf("held %q retained until %d, oracle %d", id, h.RetainedUntil, until)
			}
		}
	})
}

func TestID(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
		err  string
	}{
		{"a-1", "a-1", ""},
		{42, "42", ""},
		{int64(-7), "-7", ""},
		{42.0, "42", ""},
		{1.5, "1.5", ""},
		{json.Number("12"), "12", ""},
		{nil, "", "missing"},
		{"", "", "empty"},
		{true, "", "not a string or number"},
		{map[string]any{}, "", "not a string or number"},
		{[]any{1}, "", "not a string or number"},
	} {
		got, err := ID(c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ID(%#v) = %q, %v; want %q, error containing %q", c.in, got, err, c.want, c.err)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	ok := Spec{Parts: []string{"x", "y"}, TTL: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Spec{
		"no parts":     {TTL: time.Second},
		"dup part":     {Parts: []string{"x", "x"}, TTL: time.Second},
		"empty name":   {Parts: []string{""}, TTL: time.Second},
		"bad required": {Parts: []string{"x"}, Required: []string{"y"}, TTL: time.Second},
		"zero ttl":     {Parts: []string{"x"}},
		"neg retain":   {Parts: []string{"x"}, TTL: time.Second, Retention: -1},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestSeed002 is the seed's shape: X and Y parts, one ID completes, one
// expires with Y missing, a late X after completion is a duplicate.
func TestSeed002(t *testing.T) {
	op, err := New(Spec{Parts: []string{"x", "y"}, TTL: 100 * time.Millisecond, Retention: time.Second}, changelog.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	must := func(o Output, err error) Output {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	must(op.Process("1", "x", 1000, []byte(`{"a":1}`)))
	must(op.Process("2", "x", 1010, []byte(`{"a":2}`)))
	o := must(op.Process("1", "y", 1050, []byte(`{"b":1}`)))
	if o.Assembled == nil || string(o.Assembled.Value) != `{"id":"1","complete":true,"parts":{"x":{"a":1},"y":{"b":1}},"missing":[],"first_ms":1000,"last_ms":1050,"done_ms":1050}` {
		t.Fatalf("assembled: %+v", o.Assembled)
	}
	o = must(op.Advance(1110))
	if len(o.Incomplete) != 1 || string(o.Incomplete[0].Value) != `{"id":"2","complete":false,"parts":{"x":{"a":2}},"missing":["y"],"first_ms":1010,"last_ms":1010,"done_ms":1110}` {
		t.Fatalf("incomplete: %+v", o.Incomplete)
	}
	if o := must(op.Process("1", "x", 1200, []byte(`{}`))); !o.Duplicate {
		t.Fatalf("late part of a completed id: %+v", o)
	}
	if op.Open() != 0 {
		t.Fatalf("open = %d", op.Open())
	}
}

// FuzzDecodeState: stored bytes of any shape decode or fail, never panic,
// and what decodes re-encodes to the same bytes.
func FuzzDecodeState(f *testing.F) {
	f.Add(state{first: 1, last: 2, deadline: 3, parts: []Part{{Name: "x", Time: 1, Value: []byte(`{}`)}}}.append(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeState(b, nil, nil)
		if err != nil {
			return
		}
		if got := a.append(nil); !bytes.Equal(got, b) {
			// Varints have one canonical form only when minimal; a
			// non-minimal input may decode, so compare the round trip.
			again, err := decodeState(got, nil, nil)
			if err != nil || !reflect.DeepEqual(again, a) {
				t.Fatalf("round trip of %x: %v", b, err)
			}
		}
	})
}

// TestStateOfAnotherSpec: state written under one spec and read under
// another (a part renamed between runs) neither panics nor counts the
// part the spec no longer has: it is left out of the emitted assembly.
func TestStateOfAnotherSpec(t *testing.T) {
	st := changelog.NewMemory()
	old, err := New(Spec{Parts: []string{"x", "y"}, TTL: 100 * time.Millisecond}, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Process("1", "y", 1000, []byte(`{"b":1}`)); err != nil {
		t.Fatal(err)
	}
	op, err := New(Spec{Parts: []string{"x", "z"}, TTL: 100 * time.Millisecond}, st)
	if err != nil {
		t.Fatal(err)
	}
	h, ok, err := op.Held("1")
	if err != nil || !ok || !h.Open || len(h.Parts) != 0 || !reflect.DeepEqual(h.Missing, []string{"x", "z"}) {
		t.Fatalf("held: %+v ok=%v err=%v", h, ok, err)
	}
	o, err := op.Advance(1100)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"1","complete":false,"parts":{},"missing":["x","z"],"first_ms":1000,"last_ms":1000,"done_ms":1100}`
	if len(o.Incomplete) != 1 || string(o.Incomplete[0].Value) != want || len(o.Incomplete[0].Parts) != 0 {
		t.Fatalf("incomplete: %+v", o.Incomplete)
	}
}
