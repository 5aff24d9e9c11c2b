package assembly

import (
	"errors"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/changelog"
)

// The store keeps the spec's description with its first clock; a new
// spec with another one is refused naming the stored one, a store
// without one (an older version's) is taken.
func TestSpecDescriptionStored(t *testing.T) {
	st := changelog.NewMemory()
	s := Spec{Parts: []string{"a", "b"}, TTL: time.Minute, Described: []byte(`{"v":1,"p":"ab"}`)}
	o, err := New(s, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Process("id", "a", 10, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := New(s, st); err != nil {
		t.Fatalf("same spec: %v", err)
	}
	s2 := s
	s2.Parts = []string{"a", "b", "c"}
	s2.Described = []byte(`{"v":1,"p":"abc"}`)
	_, err = New(s2, st)
	var sc *SpecChangedError
	if !errors.As(err, &sc) || string(sc.StoredSpec()) != `{"v":1,"p":"ab"}` || !errors.Is(err, ErrSpecChanged) {
		t.Fatalf("another spec: %v, want a SpecChangedError holding the stored description", err)
	}
	old := changelog.NewMemory()
	s.Described = nil
	o, err = New(s, old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Process("id", "a", 10, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := New(s2, old); err != nil {
		t.Fatalf("a store without a description: %v, want it taken", err)
	}
}
