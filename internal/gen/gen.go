// Package gen generates a realistic stream of application log events for
// the demo, the tests and the benchmarks: levels INFO/WARN/ERROR/DEBUG, an
// event-time field that arrives out of order, and about 1% of records that
// are malformed or break the schema in several ways.
//
// Each event says what the example topology (examples/logs-by-level.yaml)
// must do with it, so tests compare the router's output with an oracle
// that does not share the router's code.
package gen

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
)

// Kinds of generated records and the route the example topology sends
// them to.
const (
	KindInfo  = "info"  // level INFO  -> main
	KindDebug = "debug" // level DEBUG -> main (the default route)
	KindWarn  = "warn"  // level WARN  -> warn
	KindError = "error" // level ERROR -> error

	KindTruncated   = "truncated_json" // -> dirty (decode, invalid_json)
	KindBadUTF8     = "invalid_utf8"   // -> dirty (decode, invalid_utf8)
	KindArray       = "array"          // -> dirty (decode, not_object)
	KindEmpty       = "empty"          // -> dirty (decode, empty_value)
	KindNoLevel     = "missing_level"  // -> dirty (schema)
	KindBadLevel    = "bad_level"      // -> dirty (schema)
	KindStringTime  = "string_ts"      // -> dirty (schema)
	KindNegativeTS  = "negative_ts"    // -> dirty (schema: minimum 0)
	KindMissingTime = "missing_ts"     // -> dirty (schema: required)
)

// RouteOf is the example topology's route for each kind.
var RouteOf = map[string]string{
	KindInfo: "main", KindDebug: "main", KindWarn: "warn", KindError: "error",
	KindTruncated: "dirty", KindBadUTF8: "dirty", KindArray: "dirty", KindEmpty: "dirty",
	KindNoLevel: "dirty", KindBadLevel: "dirty", KindStringTime: "dirty", KindNegativeTS: "dirty",
	KindMissingTime: "dirty", KindNotFramed: "dirty", KindUnknownID: "dirty", KindAvroTruncated: "dirty",
}

var badKinds = []string{KindTruncated, KindBadUTF8, KindArray, KindEmpty, KindNoLevel, KindBadLevel, KindStringTime, KindNegativeTS, KindMissingTime}

// Event is one generated record.
type Event struct {
	ID    string
	Key   []byte
	Value []byte
	Kind  string
	TS    int64 // event time, epoch ms (0 for records without one)
}

// Generator makes events deterministically from a seed.
type Generator struct {
	rng *rand.Rand
	// BadFraction is the share of malformed records (default 0.01).
	BadFraction float64
	// Disorder is the largest out-of-order shift of event time, ms.
	Disorder int64
	// Base is the event time of the first record, epoch ms.
	Base int64
	// Step is the event-time advance per record, ms.
	Step int64
	n    int64
}

var services = []string{"checkout", "payments", "search", "auth", "inventory", "shipping", "profile", "gateway"}
var messages = []string{
	"request served", "cache miss, loaded from store", "slow downstream call", "retrying after timeout",
	"user session refreshed", "payment authorised", "order created", "inventory reserved",
}

// New returns a generator with the demo's defaults.
func New(seed uint64) *Generator {
	return &Generator{
		rng:         rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		BadFraction: 0.01,
		Disorder:    5000,
		Base:        1_790_000_000_000,
		Step:        10,
	}
}

// Next returns the next event.
func (g *Generator) Next() Event {
	g.n++
	id := "e-" + strconv.FormatInt(g.n, 10)
	ts := g.Base + g.n*g.Step - g.rng.Int64N(g.Disorder+1)
	ev := Event{ID: id, Key: []byte(id), TS: ts}
	svc := services[g.rng.IntN(len(services))]
	msg := messages[g.rng.IntN(len(messages))]
	user := 1000 + g.rng.IntN(90000)
	lat := float64(g.rng.IntN(200000)) / 100
	if g.rng.Float64() < g.BadFraction {
		ev.Kind = badKinds[g.rng.IntN(len(badKinds))]
		ev.Value = g.bad(ev.Kind, id, ts, svc, msg, user, lat)
		return ev
	}
	level := "INFO"
	switch r := g.rng.IntN(100); {
	case r < 5:
		level, ev.Kind = "ERROR", KindError
	case r < 17:
		level, ev.Kind = "WARN", KindWarn
	case r < 22:
		level, ev.Kind = "DEBUG", KindDebug
	default:
		ev.Kind = KindInfo
	}
	ev.Value = event(id, ts, level, svc, msg, user, lat)
	return ev
}

func event(id string, ts int64, level, svc, msg string, user int, lat float64) []byte {
	return fmt.Appendf(nil,
		`{"id":%q,"ts":%d,"level":%q,"service":%q,"host":"%s-%d.prod.internal","message":%q,"user_id":%d,"latency_ms":%.2f,"trace_id":"%016x%016x","region":"eu-west-1"}`,
		id, ts, level, svc, svc, user%7, msg, user, lat, uint64(user)*2654435761, uint64(ts))
}

func (g *Generator) bad(kind, id string, ts int64, svc, msg string, user int, lat float64) []byte {
	good := event(id, ts, "INFO", svc, msg, user, lat)
	switch kind {
	case KindTruncated:
		return good[:len(good)/2]
	case KindBadUTF8:
		return fmt.Appendf(nil, `{"id":%q,"ts":%d,"level":"INFO","service":%q,"message":"bad byte `+"\xff\xfe"+` here"}`, id, ts, svc)
	case KindArray:
		return fmt.Appendf(nil, `[{"id":%q,"ts":%d}]`, id, ts)
	case KindEmpty:
		return []byte{}
	case KindNoLevel:
		return fmt.Appendf(nil, `{"id":%q,"ts":%d,"service":%q,"message":%q}`, id, ts, svc, msg)
	case KindBadLevel:
		return event(id, ts, "TRACE", svc, msg, user, lat)
	case KindStringTime:
		return fmt.Appendf(nil, `{"id":%q,"ts":"yesterday","level":"INFO","service":%q,"message":%q}`, id, svc, msg)
	case KindNegativeTS:
		return event(id, -ts, "WARN", svc, msg, user, lat)
	case KindMissingTime:
		return fmt.Appendf(nil, `{"id":%q,"level":"ERROR","service":%q,"message":%q}`, id, svc, msg)
	}
	panic("gen: unknown kind " + kind)
}

var idRe = regexp.MustCompile(`"id":"(e-[0-9]+)"`)

// IDOf finds a generated record's id in an output record: in the value
// when it is there (routes may re-key), else in the key.
func IDOf(key, value []byte) string {
	if m := idRe.FindSubmatch(value); m != nil {
		return string(m[1])
	}
	return string(key)
}
