package stagetwo

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/operator/window"
	"github.com/sidestream/sidestream/internal/wire"
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

// TestResultRecord: a window result's record, built in one allocation,
// is the record built field by field.
func TestResultRecord(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_000)
	for _, res := range []window.Result{
		{Key: "api@1", Revision: 1},
		{Key: "", Revision: 0, Final: true},
		{Key: "k", Revision: math.MaxInt64, Final: true, Evicted: true},
		{Key: "k", Revision: math.MinInt64, Evicted: true},
	} {
		want := &kgo.Record{
			Topic: "out", Key: []byte(res.Key), Value: []byte("v"), Timestamp: ts,
			Headers: []kgo.RecordHeader{
				{Key: wire.HeaderRevision, Value: []byte(strconv.FormatInt(res.Revision, 10))},
				{Key: wire.HeaderFinal, Value: []byte(strconv.FormatBool(res.Final))},
			},
		}
		if res.Evicted {
			want.Headers = append(want.Headers, kgo.RecordHeader{Key: wire.HeaderEvicted, Value: []byte("true")})
		}
		got := resultRecord("out", res, []byte("v"), ts, wire.TraceContext{}, false)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: record %+v, want %+v", res, got, want)
		}
	}
}
