package assembly

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/changelog"
)

func strs(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}

// TestAssemblyTraces: an assembly hands out its parts' trace contexts in
// the order the parts arrived, through a rebuild from its store; a part
// without one adds none.
func TestAssemblyTraces(t *testing.T) {
	spec := Spec{Parts: []string{"x", "y", "z"}, TTL: time.Minute}
	st := changelog.NewMemory()
	o, err := New(spec, st)
	if err != nil {
		t.Fatal(err)
	}
	o.NextTrace([]byte("tz"))
	if _, err := o.Process("id", "z", 1, []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Process("id", "y", 2, []byte(`2`)); err != nil { // no context
		t.Fatal(err)
	}
	if o, err = New(spec, st); err != nil {
		t.Fatal(err)
	}
	o.NextTrace([]byte("tx"))
	out, err := o.Process("id", "x", 3, []byte(`3`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Assembled == nil {
		t.Fatal("not assembled")
	}
	if got, want := strs(out.Assembled.Traces), []string{"tz", "tx"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("traces %q, want %q", got, want)
	}
	// The context is not carried to a later part.
	if _, err := o.Process("id2", "x", 4, []byte(`4`)); err != nil {
		t.Fatal(err)
	}
	out, err = o.Advance(time.Hour.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Incomplete) != 1 || out.Incomplete[0].Traces != nil {
		t.Fatalf("incomplete %+v, want one without traces", out.Incomplete)
	}
}

// TestAssemblyTracesOnExpiry: an incomplete assembly carries its parts'
// contexts too.
func TestAssemblyTracesOnExpiry(t *testing.T) {
	o, err := New(Spec{Parts: []string{"x", "y"}, TTL: time.Minute}, changelog.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	o.NextTrace([]byte("ty"))
	if _, err := o.Process("id", "y", 1, []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	out, err := o.Advance(time.Hour.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Incomplete) != 1 || !reflect.DeepEqual(strs(out.Incomplete[0].Traces), []string{"ty"}) {
		t.Fatalf("incomplete %+v", out.Incomplete)
	}
}

// TestAssemblyTracesState: state stored before contexts were kept reads;
// a bad trailer is corrupt.
func TestAssemblyTracesState(t *testing.T) {
	parts := []Part{{Name: "x", Time: 1, Value: []byte(`1`)}, {Name: "y", Time: 2, Value: []byte(`2`)}}
	old := state{first: 1, last: 2, deadline: 9, parts: parts}.append(nil)
	a, err := decodeState(old, nil, []string{"x", "y"})
	if err != nil || len(a.parts) != 2 || a.parts[0].Trace != nil {
		t.Fatalf("old state: %+v %v", a, err)
	}
	parts[1].Trace = []byte("t")
	b := state{first: 1, last: 2, deadline: 9, parts: parts}.append(nil)
	if a, err = decodeState(b, nil, []string{"x", "y"}); err != nil || string(a.parts[1].Trace) != "t" || a.parts[0].Trace != nil {
		t.Fatalf("traced state: %+v %v", a, err)
	}
	for name, tail := range map[string][]byte{
		"unknown tag": {2, 0, 1, 't'},
		"short":       {tracesTag, 0},
		"long":        append([]byte{tracesTag, 0, MaxTraceLen + 1}, make([]byte, MaxTraceLen+1)...),
		"trailing":    {tracesTag, 0, 0, 0},
	} {
		if _, err := decodeState(append(append([]byte(nil), old...), tail...), nil, nil); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: %v, want corrupt", name, err)
		}
	}
}
