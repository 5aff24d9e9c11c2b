package stageone

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// input is a record on the unit topologies' input topic.
func input(value string, hs ...string) *kgo.Record {
	r := &kgo.Record{Topic: "in", Partition: 3, Offset: 42, Key: []byte("k1"), Value: []byte(value), Timestamp: recordTime}
	for i := 0; i+1 < len(hs); i += 2 {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: hs[i], Value: []byte(hs[i+1])})
	}
	return r
}

// outcome is what the engine did with one record.
type outcome struct {
	outs  []*kgo.Record
	tally *metrics.Tally
}

// process runs one record through the engine and checks conservation for
// it: consumed once, and exactly one of routed, dirty, dropped.
func process(t *testing.T, top *plan.Plan, r *kgo.Record) outcome {
	t.Helper()
	tally := metrics.NewTally()
	outs := New(top).Process(r, tally)
	checkConserved(t, top, r, outs, tally)
	return outcome{outs, tally}
}

// wantDirty asserts the record went to dirty with stage and reason, and a
// message holding each of msg.
func (o outcome) wantDirty(t *testing.T, stage, reason string, msg ...string) {
	t.Helper()
	if o.tally.Dirty[[2]string{stage, reason}] != 1 {
		t.Fatalf("dirty counts %v, outputs %v; want %s/%s", o.tally.Dirty, topics(o.outs), stage, reason)
	}
	d := o.outs[0]
	if s, _ := header(d, wire.HeaderStage); s != stage {
		t.Errorf("stage header %q, want %q", s, stage)
	}
	if s, _ := header(d, wire.HeaderReason); s != reason {
		t.Errorf("reason header %q, want %q", s, reason)
	}
	e, _ := header(d, wire.HeaderError)
	for _, m := range msg {
		if !strings.Contains(e, m) {
			t.Errorf("error header %q does not contain %q", e, m)
		}
	}
}

// wantTopics asserts the record was routed to exactly these topics.
func (o outcome) wantTopics(t *testing.T, want ...string) {
	t.Helper()
	if got := topics(o.outs); !slices.Equal(got, want) || o.tally.Routed != 1 {
		e := ""
		if len(o.outs) == 1 {
			e, _ = header(o.outs[0], wire.HeaderError)
		}
		t.Fatalf("outputs %v (routed %d, dirty %v %s), want %v", got, o.tally.Routed, o.tally.Dirty, e, want)
	}
}

const threeRoutes = `routes:
  - {name: error, topic: out.error, when: 'level == "ERROR"'}
  - {name: loud, topic: out.loud, when: 'level != "DEBUG" && level != "INFO"'}
  - {name: main, topic: out.main, when: 'level == "INFO"'}
`

func TestRouteMatch(t *testing.T) {
	first := topo(t, threeRoutes, "routing: {match: first, default: main}\n")
	all := topo(t, threeRoutes, "routing: {match: all, default: main}\n")
	drop := topo(t, threeRoutes, "routing: {match: first, default: drop}\n")
	allDrop := topo(t, threeRoutes, "routing: {match: all, default: drop}\n")
	for _, tc := range []struct {
		name  string
		top   *plan.Plan
		level string
		want  []string // nil: dropped
	}{
		{"first: first match only", first, "ERROR", []string{"out.error"}},
		{"first: second route", first, "WARN", []string{"out.loud"}},
		{"first: own predicate", first, "INFO", []string{"out.main"}},
		{"first: default route, whatever its predicate", first, "DEBUG", []string{"out.main"}},
		{"all: every match in route order", all, "ERROR", []string{"out.error", "out.loud"}},
		{"all: one match", all, "WARN", []string{"out.loud"}},
		{"all: no default when something matched", all, "INFO", []string{"out.main"}},
		{"all: default", all, "DEBUG", []string{"out.main"}},
		{"drop: matched", drop, "WARN", []string{"out.loud"}},
		{"drop: unmatched", drop, "DEBUG", nil},
		{"drop: a missing field is null, unequal to any string", drop, "", []string{"out.loud"}},
		{"all, drop: fan-out", allDrop, "ERROR", []string{"out.error", "out.loud"}},
		{"all, drop: unmatched", allDrop, "DEBUG", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := `{"level":"` + tc.level + `","n":1}`
			if tc.level == "" {
				v = `{"n":1}`
			}
			o := process(t, tc.top, input(v, "h", "1"))
			if tc.want == nil {
				if o.tally.Dropped[wire.DropNoRoute] != 1 {
					t.Fatalf("outputs %v, dropped %v; want dropped (no_route)", topics(o.outs), o.tally.Dropped)
				}
				return
			}
			o.wantTopics(t, tc.want...)
			for _, r := range o.outs {
				if string(r.Key) != "k1" || string(r.Value) != v || !r.Timestamp.Equal(recordTime) || len(r.Headers) != 2 ||
					string(r.Headers[0].Key) != "h" || r.Headers[1].Key != wire.HeaderTopologyVersion || string(r.Headers[1].Value) != tc.top.Version {
					t.Errorf("output %+v: want the input's key, value, timestamp and headers untouched, then the version", r)
				}
			}
			for _, want := range tc.want {
				if n := o.tally.Routes[strings.TrimPrefix(want, "out.")]; n != 1 {
					t.Errorf("route count of %s = %d, want 1", want, n)
				}
			}
		})
	}
}

func TestRouteKey(t *testing.T) {
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"string field", "service", `{"service":"checkout"}`, "checkout"},
		{"int field", "user_id", `{"user_id":1234}`, "1234"},
		{"int beyond 2^53", "user_id", `{"user_id":9007199254740993}`, "9007199254740993"},
		{"integral float", "user_id", `{"user_id":42.0}`, "42"},
		{"float", "user_id", `{"user_id":1.5}`, "1.5"},
		{"big float", "user_id", `{"user_id":1e21}`, "1000000000000000000000"},
		{"bool", "flag", `{"flag":true}`, "true"},
		{"object", "o", `{"o":{"b":1,"a":"x"}}`, `{"a":"x","b":1}`},
		{"metadata", `_key + "/" + string(_partition)`, `{}`, "k1/3"},
		{"expression", `service + "-" + level`, `{"service":"s","level":"INFO"}`, "s-INFO"},
		{"empty string", "service", `{"service":""}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := topo(t, "routes: [{name: all, topic: out, key: '"+tc.key+"'}]\n")
			o := process(t, top, input(tc.value))
			o.wantTopics(t, "out")
			if got := string(o.outs[0].Key); got != tc.want {
				t.Fatalf("key %q, want %q", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name, key, value string
		msg              []string
	}{
		{"null", "service", `{"service":null}`, []string{`route "all": key "service": returned null`}},
		{"missing field", "service", `{"level":"INFO"}`, []string{"returned null"}},
		{"infinite", "n / 0", `{"n":1}`, []string{"returned +Inf"}},
		{"runtime error", "len(n)", `{"n":1}`, []string{`key "len(n)"`, "invalid argument for len"}},
	} {
		t.Run("dirty: "+tc.name, func(t *testing.T) {
			top := topo(t, "routes: [{name: all, topic: out, key: '"+tc.key+"'}]\n")
			process(t, top, input(tc.value)).wantDirty(t, wire.StageRoute, wire.ReasonKeyError, tc.msg...)
		})
	}
}

func TestRouteProjection(t *testing.T) {
	top := topo(t, `routes:
  - name: slim
    topic: out
    key: id
    project:
      zeta: level
      id: id
      "odd name": msg
      n: n + 1
      big: big
      meta: '{"p": _partition, "k": _key}'
      nested: o
      missing: nope
      when_ms: _event_time
`, tsMillis)
	o := process(t, top, input(`{"ts":5,"id":"e-1","level":"INFO","msg":"say \"hi\" <b>é","n":41,"big":9007199254740993,"o":{"a":[1,2.5]},"unused":"x"}`))
	o.wantTopics(t, "out")
	want := `{"zeta":"INFO","id":"e-1","odd name":"say \"hi\" \u003cb\u003eé","n":42,"big":9007199254740993,"meta":{"k":"k1","p":3},"nested":{"a":[1,2.5]},"missing":null,"when_ms":5}`
	if got := string(o.outs[0].Value); got != want {
		t.Fatalf("projection\n %s\nwant\n %s", got, want)
	}
	if !json.Valid(o.outs[0].Value) || string(o.outs[0].Key) != "e-1" {
		t.Fatalf("projection is not valid JSON or key %q is not the id", o.outs[0].Key)
	}

	for _, tc := range []struct {
		name, expr string
		msg        []string
	}{
		{"runtime error", "len(n)", []string{`route "p": project "x"`, "invalid argument for len"}},
		{"not JSON", "n / 0", []string{`project "x": value float64 is not JSON`}},
	} {
		t.Run("dirty: "+tc.name, func(t *testing.T) {
			top := topo(t, "routes: [{name: p, topic: out, project: {x: '"+tc.expr+"'}}]\n")
			process(t, top, input(`{"n":1}`)).wantDirty(t, wire.StageRoute, wire.ReasonProjectError, tc.msg...)
		})
	}
}

func TestRoutePredicateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, when, value, reason string
		msg                       []string
	}{
		{"string used as a predicate", "flag", `{"flag":"yes"}`, wire.ReasonPredicateType, []string{`route "r": when "flag" returned string, not bool`}},
		{"number used as a predicate", "flag", `{"flag":1}`, wire.ReasonPredicateType, []string{"returned int, not bool"}},
		{"object used as a predicate", "flag", `{"flag":{}}`, wire.ReasonPredicateType, []string{"returned map[string]interface {}, not bool"}},
		{"mismatched types", "level + 1 > 2", `{"level":"INFO"}`, wire.ReasonExprError, []string{`route "r": when "level + 1 > 2"`, "invalid operation"}},
		{"len of a number", "len(level) > 0", `{"level":5}`, wire.ReasonExprError, []string{"invalid argument for len"}},
		{"member of a string", `level.x == "a"`, `{"level":"INFO"}`, wire.ReasonExprError, []string{`when "level.x == \"a\""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := topo(t, "routes: [{name: r, topic: out, when: '"+tc.when+"'}]\n")
			o := process(t, top, input(tc.value))
			o.wantDirty(t, wire.StageRoute, tc.reason, tc.msg...)
		})
	}
	// A missing field is null, and a null predicate is false: no match.
	top := topo(t, "routes: [{name: r, topic: out, when: flag}]\n")
	if o := process(t, top, input(`{"other":1}`)); o.tally.Dropped[wire.DropNoRoute] != 1 {
		t.Fatalf("missing predicate field: outputs %v, dirty %v; want dropped", topics(o.outs), o.tally.Dirty)
	}
	if o := process(t, top, input(`{"flag":true}`)); len(o.outs) != 1 {
		t.Fatalf("bool predicate field: outputs %v", topics(o.outs))
	}
}

// TestRouteNoPartialFanOut: one failing route makes the whole record
// dirty; the routes that matched before it write nothing.
func TestRouteNoPartialFanOut(t *testing.T) {
	top := topo(t, `routes:
  - {name: a, topic: out.a}
  - {name: b, topic: out.b, key: missing}
`, "routing: {match: all, default: drop}\n")
	o := process(t, top, input(`{"x":1}`))
	o.wantDirty(t, wire.StageRoute, wire.ReasonKeyError, `route "b"`)
	if len(o.tally.Routes) != 0 {
		t.Fatalf("route counts %v for a dirty record", o.tally.Routes)
	}
}

func TestRouteMetadata(t *testing.T) {
	top := topo(t, `routes:
  - {name: key, topic: o.key, when: '_key == "k1"'}
  - {name: partition, topic: o.partition, when: '_partition == 3'}
  - {name: offset, topic: o.offset, when: '_offset == 42'}
  - {name: topic, topic: o.topic, when: '_topic == "in"'}
  - {name: header, topic: o.header, when: '_headers["x"] == "y"'}
  - {name: no-header, topic: o.no-header, when: '_headers["absent"] == ""'}
  - {name: timestamp, topic: o.timestamp, when: '_timestamp == 1700000000456'}
  - {name: event-time, topic: o.event-time, when: '_event_time == 1790000000123'}
  - {name: shadowed, topic: o.shadowed, when: '_key == "from-json"'}
`, "routing: {match: all, default: drop}\n", tsMillis)
	o := process(t, top, input(`{"ts":1790000000123,"_key":"from-json"}`, "x", "first", "x", "y"))
	// Metadata wins over a JSON field of the same name; of repeated
	// headers the last wins.
	o.wantTopics(t, "o.key", "o.partition", "o.offset", "o.topic", "o.header", "o.no-header", "o.timestamp", "o.event-time")

	// No headers at all: _headers is an empty map, not nil.
	r := input(`{"ts":1}`)
	r.Headers = nil
	process(t, top, r).wantTopics(t, "o.key", "o.partition", "o.offset", "o.topic", "o.no-header", "o.timestamp")
}

func TestKeyString(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
		err  bool
	}{
		{"s", "s", false},
		{[]byte("b"), "b", false},
		{7, "7", false},
		{int64(-7), "-7", false},
		{42.0, "42", false},
		{-0.5, "-0.5", false},
		{false, "false", false},
		{[]any{1, "a"}, `[1,"a"]`, false},
		{nil, "", true},
		{func() {}, "", true},
	} {
		got, err := keyString(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("keyString(%#v) = %q, %v", tc.in, got, err)
		}
	}
}

// TestVersionHeader: a route's output names the plan's version once,
// replacing an input's own (an upstream router's), and keeps the input's
// other headers in order; the input record is not touched.
func TestVersionHeader(t *testing.T) {
	top := topo(t, tsMillis, "routing: {match: first, default: rest}\n", `routes:
  - {name: rest, topic: out.rest}
`)
	in := input(`{"ts":1}`, "a", "1", wire.HeaderTopologyVersion, "upstream", "b", "2")
	o := process(t, top, in)
	o.wantTopics(t, "out.rest")
	var got []string
	for _, h := range o.outs[0].Headers {
		got = append(got, h.Key+"="+string(h.Value))
	}
	want := []string{"a=1", "b=2", wire.HeaderTopologyVersion + "=" + top.Version}
	if strings.Join(got, ",") != strings.Join(want, ",") || len(top.Version) != 16 {
		t.Fatalf("headers %q, want %q", got, want)
	}
	if len(in.Headers) != 3 || string(in.Headers[1].Value) != "upstream" {
		t.Fatalf("the input's headers changed: %q", in.Headers)
	}
}
