package processor

import (
	"testing"

	"github.com/sidestream/sidestream/changelog"
)

// TestTaskSetGenerations: a task built while its partition (or
// everything) was dropped is refused; a drop of another partition does
// not refuse it. Dropped tasks' stores are closed. Windows and assemblies
// share the one task set.
func TestTaskSetGenerations(t *testing.T) {
	t.Run("window", func(t *testing.T) {
		s := newTaskSet[*windowTask](nil)
		testGenerations(t, &s, func() *windowTask { return &windowTask{st: changelog.NewMemory()} })
	})
	t.Run("assembly", func(t *testing.T) {
		s := newTaskSet[*assemblyTask](nil)
		testGenerations(t, &s, func() *assemblyTask { return &assemblyTask{st: changelog.NewMemory()} })
	})
}

func testGenerations[T task](t *testing.T, s *taskSet[T], task func() T) {
	_, g := s.buildLock("rep", 1)
	s.drop(map[string][]int32{"rep": {2}, "other": {1}})
	if !s.putIf(g, "rep", 1, task()) {
		t.Fatal("a drop of other partitions refused the build")
	}
	_, g = s.buildLock("rep", 2)
	s.drop(map[string][]int32{"rep": {2}})
	if s.putIf(g, "rep", 2, task()) {
		t.Fatal("a build that raced with its partition's drop was kept")
	}
	_, g = s.buildLock("rep", 3)
	s.drop(nil)
	if s.putIf(g, "rep", 3, task()) {
		t.Fatal("a build that raced with a drop of everything was kept")
	}
	if len(s.all()) != 0 {
		t.Fatalf("drop(nil) left %d tasks", len(s.all()))
	}

	kept := task()
	_, g = s.buildLock("rep", 4)
	if !s.putIf(g, "rep", 4, kept) {
		t.Fatal("a quiet build was refused")
	}
	s.drop(map[string][]int32{"rep": {4}})
	if err := kept.store().Set([]byte("k"), nil); err != changelog.ErrClosed {
		t.Fatalf("the dropped task's store is still open: %v", err)
	}
}
