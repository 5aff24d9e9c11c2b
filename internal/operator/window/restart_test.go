package window

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
)

// outcome is one call's result, comparable across runs.
type outcome struct {
	Out   Output
	Dirty bool
}

func dumpStore(t tb, st changelog.Store) map[string]string {
	t.Helper()
	m := map[string]string{}
	if err := st.Range(nil, func(k, v []byte) bool { m[string(k)] = string(v); return true }); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRestartEquivalence models the exactly-once loop in process: at
// random points a commit ships the store's Changes to a changelog and
// keeps the outputs since the previous commit; at random points the task
// crashes, losing its uncommitted outputs and state, and a new operator
// over a fresh Memory store restored from the changelog replays the input
// from the last commit. The committed outputs must equal those of one
// uninterrupted run, byte for byte, and so must the final state.
func TestRestartEquivalence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSpec(t)
		ops := genOps(t, s, 150)

		straight, st0 := newOp(t, s)
		var want []outcome
		for _, p := range ops {
			out, err := call(straight, p)
			want = append(want, outcome{out, err != nil})
		}

		var log []changelog.Change
		o, st := newOp(t, s)
		var committed, pending []outcome
		lastCommit, crashes, commits := 0, 0, 0
		for i := 0; i < len(ops); {
			out, err := call(o, ops[i])
			if err != nil {
				toExp(t, out, err) // fails on a store error
			}
			pending = append(pending, outcome{out, err != nil})
			i++
			switch rapid.IntRange(0, 9).Draw(t, "event") {
			case 0, 1, 2:
				for _, c := range st.Changes() {
					log = append(log, changelog.Change{Key: bytes.Clone(c.Key), Value: cloneValue(c.Value)})
				}
				st.ResetChanges()
				committed = append(committed, pending...)
				pending, lastCommit = nil, i
				commits++
			case 3:
				if crashes >= 8 {
					break
				}
				crashes++
				st = changelog.NewMemory()
				for _, c := range log {
					if err := st.Restore(c.Key, c.Value); err != nil {
						t.Fatal(err)
					}
				}
				var err error
				if o, err = New(s, st); err != nil {
					t.Fatal(err)
				}
				pending, i = nil, lastCommit
				checkStore(t, o, st)
			}
		}
		committed = append(committed, pending...)
		if !reflect.DeepEqual(committed, want) {
			for i := range min(len(committed), len(want)) {
				if !reflect.DeepEqual(committed[i], want[i]) {
					t.Fatalf("op %d %v after %d crashes, %d commits:\n got  %+v\n want %+v", i, ops[i], crashes, commits, committed[i], want[i])
				}
			}
			t.Fatalf("%d outcomes, want %d", len(committed), len(want))
		}
		if got, exp := dumpStore(t, st), dumpStore(t, st0); !maps.Equal(got, exp) {
			t.Fatalf("final state differs:\n got  %q\n want %q", got, exp)
		}
		if o.Watermark() != straight.Watermark() || o.OpenWindows() != straight.OpenWindows() {
			t.Fatalf("watermark %d open %d, want %d %d", o.Watermark(), o.OpenWindows(), straight.Watermark(), straight.OpenWindows())
		}
	})
}

func cloneValue(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func TestSpecChangedIsRefused(t *testing.T) {
	s := Spec{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{"n", Count}}}
	o, st := newOp(t, s)
	if _, err := o.Process("k", 5, []any{1}); err != nil {
		t.Fatal(err)
	}
	s2 := s
	s2.Grace = msd(5)
	if _, err := New(s2, st); !errors.Is(err, ErrSpecChanged) {
		t.Fatalf("New with another spec: %v, want ErrSpecChanged", err)
	}
	if _, err := New(s, st); err != nil {
		t.Fatalf("New with the same spec: %v", err)
	}
}

// A store keeps the spec's description: a new spec with another one is
// refused with the stored description; one that differs only where the
// description does not (max_out_of_orderness) is not.
func TestSpecDescriptionDecides(t *testing.T) {
	s := Spec{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{"n", Count}}, Described: []byte(`{"v":1,"a":1}`)}
	o, st := newOp(t, s)
	if _, err := o.Process("k", 5, []any{1}); err != nil {
		t.Fatal(err)
	}
	s2 := s
	s2.Described = []byte(`{"v":1,"a":2}`)
	_, err := New(s2, st)
	var sc *SpecChangedError
	if !errors.As(err, &sc) || string(sc.StoredSpec()) != `{"v":1,"a":1}` {
		t.Fatalf("New with another description: %v, want a SpecChangedError holding the stored one", err)
	}
	s3 := s
	s3.MaxOutOfOrderness = msd(3) // in the fingerprint, not the description
	if _, err := New(s3, st); err != nil {
		t.Fatalf("New with the same description: %v", err)
	}
}

// A meta of version 1 (no description) is still read: the fingerprint
// decides, and a refusal says no description is stored.
func TestMetaV1IsRead(t *testing.T) {
	s := Spec{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{"n", Count}}}
	p, err := s.compile()
	if err != nil {
		t.Fatal(err)
	}
	st := changelog.NewMemory()
	v1 := binary.BigEndian.AppendUint64(binary.AppendVarint([]byte{metaV1}, 42), p.fingerprint)
	if err := st.Set(metaKey, v1); err != nil {
		t.Fatal(err)
	}
	s.Described = []byte(`{"v":1}`)
	o, err := New(s, st)
	if err != nil || o.Watermark() != 42 {
		t.Fatalf("New over a v1 meta: %v, watermark %d", err, o.Watermark())
	}
	s2 := s
	s2.Grace = msd(5)
	_, err = New(s2, st)
	var sc *SpecChangedError
	if !errors.As(err, &sc) || sc.StoredSpec() != nil {
		t.Fatalf("New over a v1 meta with another spec: %v, want a SpecChangedError without a stored description", err)
	}
}

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []meta{{watermark: -5, fingerprint: 7}, {watermark: 1 << 40, fingerprint: 1, described: []byte("x")}} {
		got, err := decodeMeta(appendMeta(nil, m))
		if err != nil || got.watermark != m.watermark || got.fingerprint != m.fingerprint || !bytes.Equal(got.described, m.described) {
			t.Fatalf("meta %+v round trip: %+v, %v", m, got, err)
		}
	}
	if _, err := decodeMeta([]byte{metaVersion, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 'x'}); err == nil {
		t.Fatal("a description shorter than its length decoded")
	}
}
