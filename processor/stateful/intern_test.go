package stateful

import (
	"strconv"
	"strings"
	"testing"
)

// TestWindowTaskNamesBounded: the names a window task keeps (topics,
// source ids, group keys) are the strings of what it read, and it keeps
// at most maxNames of each, however many it reads, and none longer than
// maxNameLen.
func TestWindowTaskNamesBounded(t *testing.T) {
	var task windowTask
	for i := range 3 * maxNames {
		s := "k" + strconv.Itoa(i%(2*maxNames))
		if got := task.groupKey([]byte(s)); got != s {
			t.Fatalf("groupKey %q = %q", s, got)
		}
		if got := task.topic([]byte(s)); got != s {
			t.Fatalf("topic %q = %q", s, got)
		}
		if got, want := task.sourceID(s, int32(i)), SourceID(s, int32(i)); got != want {
			t.Fatalf("sourceID = %q, want %q", got, want)
		}
	}
	if len(task.keys) != maxNames || len(task.topics) != maxNames || len(task.srcIDs) != maxNames {
		t.Fatalf("kept %d keys, %d topics, %d source ids; want %d each", len(task.keys), len(task.topics), len(task.srcIDs), maxNames)
	}
	var fresh windowTask
	long := strings.Repeat("k", maxNameLen+1)
	if got := fresh.groupKey([]byte(long)); got != long || len(fresh.keys) != 0 {
		t.Fatalf("a key of %d bytes: %d bytes back, %d kept", len(long), len(got), len(fresh.keys))
	}
}
