package assembly

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

// storedBytes recounts StateBytes from the store.
func storedBytes(t *rapid.T, st *changelog.Memory) int64 {
	var n int64
	if err := st.Range(assemblyPrefix, func(k, v []byte) bool { n += assemblyCost(len(k)-1, len(v)); return true }); err != nil {
		t.Fatal(err)
	}
	return n
}

// deadlineOrder lists the open assemblies in eviction order.
func deadlineOrder(t *rapid.T, st *changelog.Memory) []string {
	var ids []string
	if err := st.Range(timerPrefix, func(k, _ []byte) bool {
		if k[9] == nsAssembly {
			ids = append(ids, string(k[10:]))
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestLimitsProperty: with random limits and streams, a part is refused
// (route) or evicts (evict) exactly when it would open an assembly past a
// limit, judged from the state before it; a refused part changes no
// assembly; evict emits the assemblies with the earliest deadlines;
// open assemblies never pass max_entries; StateBytes matches the store;
// and a twin restarted from the changelog at random points gives the
// same outputs.
func TestLimitsProperty(t *testing.T) {
	seen := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		spec := genSpec(t)
		spec.Limits.Policy = rapid.SampledFrom([]statelimit.Policy{statelimit.Route, statelimit.Evict}).Draw(t, "policy")
		if rapid.IntRange(0, 3).Draw(t, "entries?") > 0 {
			spec.Limits.MaxEntries = rapid.IntRange(1, 4).Draw(t, "max_entries")
		}
		if spec.Limits.MaxEntries == 0 || rapid.Bool().Draw(t, "bytes?") {
			spec.Limits.MaxBytes = rapid.Int64Range(20, 200).Draw(t, "max_bytes")
		}
		st := changelog.NewMemory()
		op, err := New(spec, st)
		if err != nil {
			t.Fatal(err)
		}
		twinSt := changelog.NewMemory()
		twin, _ := New(spec, twinSt)
		lim := spec.Limits
		ids := []string{"1", "2", "3", "a", "b", "c", "order-9"}
		parts := spec.Parts
		now := int64(0)
		for i := range rapid.IntRange(1, 100).Draw(t, "steps") {
			now += rapid.Int64Range(-5, 10).Draw(t, "dt")
			if rapid.IntRange(0, 15).Draw(t, "restart") == 0 {
				cp := changelog.NewMemory()
				_ = twinSt.Range(nil, func(k, v []byte) bool { return cp.Restore(k, v) == nil })
				twinSt = cp
				if twin, err = New(spec, cp); err != nil {
					t.Fatal(err)
				}
			}
			id := rapid.SampledFrom(ids).Draw(t, "id")
			part := rapid.SampledFrom(parts).Draw(t, "part")
			v := []byte(fmt.Sprintf(`{"n":%d}`, rapid.IntRange(0, 999).Draw(t, "v")))
			before, wasHeld, _ := op.Held(id)
			open, size := op.Open(), op.StateBytes()
			order := deadlineOrder(t, st)
			out, err := op.Process(id, part, now, v)
			if err != nil {
				t.Fatal(err)
			}
			tout, terr := twin.Process(id, part, now, v)
			if terr != nil || !reflect.DeepEqual(out, tout) {
				t.Fatalf("step %d: twin restarted from the changelog differs:\n%+v\n%+v", i, out, tout)
			}
			if got := storedBytes(t, st); got != op.StateBytes() {
				t.Fatalf("step %d: store holds %d bytes, StateBytes %d", i, got, op.StateBytes())
			}
			if lim.MaxEntries > 0 && op.Open() > lim.MaxEntries {
				t.Fatalf("step %d: %d open, limit %d", i, op.Open(), lim.MaxEntries)
			}
			if ov := out.Overflow; ov != nil {
				seen["overflow"]++
				after, _, _ := op.Held(id)
				if lim.Policy != statelimit.Route || before.Open || out.Opened || out.Assembled != nil || after.Open {
					t.Fatalf("step %d: overflow %+v with policy %v, held before %+v", i, ov, lim.Policy, before)
				}
				if (ov.Limit == statelimit.LimitEntries) != (lim.MaxEntries > 0 && open+1 > lim.MaxEntries) ||
					ov.Limit == statelimit.LimitEntries && ov.Size != int64(open) || ov.Limit == statelimit.LimitBytes && ov.Size != size {
					t.Fatalf("step %d: overflow %+v, state %d open %d bytes, limits %+v", i, ov, open, size, lim)
				}
				continue
			}
			if out.Opened && out.Assembled == nil && lim.Policy == statelimit.Route && lim.MaxEntries > 0 && open+1 > lim.MaxEntries {
				t.Fatalf("step %d: opened past the limit: %d open, limit %d", i, open, lim.MaxEntries)
			}
			var evicted []string
			for _, a := range out.Incomplete {
				if a.Evicted {
					if a.Complete || !bytes.HasSuffix(a.Value, []byte(`,"evicted":true}`)) {
						t.Fatalf("step %d: evicted %+v %s", i, a, a.Value)
					}
					evicted = append(evicted, a.ID)
				}
			}
			if len(evicted) != out.Evicted || lim.Policy != statelimit.Evict && out.Evicted > 0 {
				t.Fatalf("step %d: %d evicted, Evicted %d", i, len(evicted), out.Evicted)
			}
			if out.Evicted > 0 {
				seen["evicted"] += out.Evicted
				if wasHeld && before.Open {
					t.Fatalf("step %d: a part for open %q evicted %v", i, id, evicted)
				}
				if want := order[:len(evicted)]; !slices.Equal(evicted, want) {
					t.Fatalf("step %d: evicted %v, want the earliest deadlines %v", i, evicted, want)
				}
			}
			seen["admitted"]++
		}
	})
	t.Logf("exercised: %v", seen)
	for _, k := range []string{"overflow", "evicted", "admitted"} {
		if seen[k] == 0 {
			t.Errorf("the generator never produced %s", k)
		}
	}
}
