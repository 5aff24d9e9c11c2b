package stageone

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestTombstoneForward: a keyed tombstone goes, as it came (key, headers,
// null value), to every route with tombstones: forward and to no other,
// whatever their predicates; a keyless one, or one too large to write,
// goes to dirty; without such a route it stays dirty as before.
func TestTombstoneForward(t *testing.T) {
	top := topo(t, tsMillis, "routing: {match: first, default: rest}\n", `routes:
  - {name: users, topic: users.clean, when: 'kind == "user"', tombstones: forward}
  - {name: mirror, topic: users.mirror, value: projection, project: {id: string(id)}, format: connect-json, tombstones: forward}
  - {name: keyed, topic: users.by-email, key: email}
  - {name: rest, topic: users.rest}
`)
	tomb := input("", "trace", "t-1")
	tomb.Value = nil
	o := process(t, top, tomb)
	o.wantTopics(t, "users.clean", "users.mirror")
	for _, r := range o.outs {
		if r.Value != nil || string(r.Key) != "k1" || len(r.Headers) != 2 || r.Headers[0].Key != "trace" || string(r.Headers[1].Value) != top.Version || !r.Timestamp.Equal(recordTime) {
			t.Fatalf("forwarded tombstone %+v", r)
		}
	}
	if o.tally.Routes["users"] != 1 || o.tally.Routes["mirror"] != 1 || o.tally.Routes["rest"] != 0 {
		t.Fatalf("route counts %v", o.tally.Routes)
	}

	// An empty value is not a tombstone.
	empty := input("")
	process(t, top, empty).wantDirty(t, wire.StageDecode, wire.ReasonEmptyValue)

	keyless := input("")
	keyless.Value, keyless.Key = nil, nil
	process(t, top, keyless).wantDirty(t, wire.StageDecode, wire.ReasonNullValue, "nothing to delete")

	big := input("")
	big.Value, big.Key = nil, []byte(strings.Repeat("k", 3000))
	process(t, topo(t, tsMillis, small, "routes: [{name: a, topic: out, tombstones: forward}]\n"), big).wantDirty(t, wire.StageProduce, wire.ReasonTooLarge, "tombstone")

	// Without tombstones: forward a tombstone is dirty.
	plain := &kgo.Record{Topic: "in", Key: []byte("k"), Timestamp: recordTime}
	process(t, topo(t, tsMillis), plain).wantDirty(t, wire.StageDecode, wire.ReasonNullValue)
}

func TestTombstonesValidation(t *testing.T) {
	for _, c := range []struct{ routes, want string }{
		{"routes: [{name: a, topic: out, tombstones: keep}]\n", `must be "dirty" or "forward"`},
		{"routes: [{name: a, topic: out, key: email, tombstones: forward}]\n", "the delete would miss them"},
		{"routes: [{name: a, topic: out, tombstones: forward, window: {type: tumbling, size: 1m, late_topic: late, aggregates: [{name: n, fn: count}]}}]\n", "plain routes"},
	} {
		src := "application_id: unit\nbrokers: [127.0.0.1:9092]\ninputs: [{topic: in}]\nevent_time: {field: ts, format: epoch_ms}\nrouting: {default: drop}\ndirty: {topic: dirty}\n" + c.routes
		_, err := config.Load(examplesDir+"unit.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.routes, err, c.want)
		}
	}
}
