package processor

import (
	"sync"
	"testing"

	"github.com/sidestream/sidestream/changelog"
)

// TestWindowStageGenerations: a task built while its partition (or
// everything) was dropped is refused; a drop of another partition does
// not refuse it. Dropped tasks' stores are closed.
func TestWindowStageGenerations(t *testing.T) {
	ws := &windowStage{tasks: map[tp]*windowTask{}, building: map[tp]*sync.Mutex{}, gens: map[tp]uint64{}, clNext: map[tp]int64{}}
	task := func() *windowTask { return &windowTask{st: changelog.NewMemory()} }

	_, g := ws.buildLock("rep", 1)
	ws.drop(map[string][]int32{"rep": {2}, "other": {1}})
	if !ws.putIf(g, "rep", 1, task()) {
		t.Fatal("a drop of other partitions refused the build")
	}
	_, g = ws.buildLock("rep", 2)
	ws.drop(map[string][]int32{"rep": {2}})
	if ws.putIf(g, "rep", 2, task()) {
		t.Fatal("a build that raced with its partition's drop was kept")
	}
	_, g = ws.buildLock("rep", 3)
	ws.drop(nil)
	if ws.putIf(g, "rep", 3, task()) {
		t.Fatal("a build that raced with a drop of everything was kept")
	}
	if len(ws.all()) != 0 {
		t.Fatalf("drop(nil) left %d tasks", len(ws.all()))
	}

	kept := task()
	_, g = ws.buildLock("rep", 4)
	if !ws.putIf(g, "rep", 4, kept) {
		t.Fatal("a quiet build was refused")
	}
	ws.drop(map[string][]int32{"rep": {4}})
	if err := kept.st.Set([]byte("k"), nil); err != changelog.ErrClosed {
		t.Fatalf("the dropped task's store is still open: %v", err)
	}
}
