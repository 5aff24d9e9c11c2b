package gen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/wire"
)

// Kinds of hostile frames of the Avro log generator; each goes to dirty
// (stage decode) with the reason of the same name.
const (
	KindNotFramed     = wire.ReasonNotRegistryFramed // a JSON value, no magic byte
	KindUnknownID     = wire.ReasonUnknownSchemaID   // framed with an id the registry does not have
	KindAvroTruncated = wire.ReasonAvroDecode        // a good frame cut in its payload
)

var hostileKinds = []string{KindNotFramed, KindUnknownID, KindAvroTruncated}

// ReasonOf is the dirty reason of each hostile Avro kind.
var ReasonOf = map[string]string{
	KindNotFramed: wire.ReasonNotRegistryFramed, KindUnknownID: wire.ReasonUnknownSchemaID, KindAvroTruncated: wire.ReasonAvroDecode,
}

// AvroLogs generates the log events of New as Avro records in the
// Confluent wire format (examples/schemas/log-event.avsc), with a share of
// hostile frames: no magic byte, an unknown schema id, a truncated
// payload. Each event's Kind says where examples/logs-avro.yaml sends it
// (RouteOf) and, for a hostile frame, its dirty reason (ReasonOf).
type AvroLogs struct {
	rng    *rand.Rand
	schema avro.Schema
	id     int
	// HostileFraction is the share of hostile frames (default 0.02).
	HostileFraction float64
	// Disorder, Base and Step are New's event-time settings.
	Disorder, Base, Step int64
	n                    int64
}

// NewAvroLogs returns a generator that writes with schema (Avro JSON
// text), registered under id.
func NewAvroLogs(seed uint64, schema string, id int) (*AvroLogs, error) {
	s, err := avro.Parse(schema)
	if err != nil {
		return nil, fmt.Errorf("gen: the Avro log schema: %w", err)
	}
	return &AvroLogs{
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), schema: s, id: id,
		HostileFraction: 0.02, Disorder: 5000, Base: 1_790_000_000_000, Step: 10,
	}, nil
}

// Next returns the next event; its Value is the framed record.
func (g *AvroLogs) Next() Event {
	g.n++
	id := "e-" + strconv.FormatInt(g.n, 10)
	ts := g.Base + g.n*g.Step - g.rng.Int64N(g.Disorder+1)
	ev := Event{ID: id, Key: []byte(id), TS: ts}
	svc := services[g.rng.IntN(len(services))]
	user := 1000 + g.rng.IntN(90000)
	rec := map[string]any{
		"id": id, "ts": time.UnixMilli(ts).UTC(), "service": svc, "host": fmt.Sprintf("%s-%d.prod.internal", svc, user%7),
		"message": messages[g.rng.IntN(len(messages))], "user_id": int64(user),
		"latency_ms": float64(g.rng.IntN(200000)) / 100, "region": "eu-west-1",
		"trace_id": map[string]any{"string": fmt.Sprintf("%016x%016x", uint64(user)*2654435761, uint64(ts))},
	}
	hostile := g.rng.Float64() < g.HostileFraction
	switch r := g.rng.IntN(100); {
	case r < 5:
		rec["level"], ev.Kind = "ERROR", KindError
	case r < 17:
		rec["level"], ev.Kind = "WARN", KindWarn
	case r < 22:
		rec["level"], ev.Kind = "DEBUG", KindDebug
	default:
		rec["level"], ev.Kind = "INFO", KindInfo
	}
	payload, err := avro.Marshal(g.schema, rec)
	if err != nil {
		panic("gen: encode an Avro log event: " + err.Error()) // the record matches the schema it was made for
	}
	schemaID := g.id
	if hostile {
		ev.Kind = hostileKinds[g.rng.IntN(len(hostileKinds))]
		switch ev.Kind {
		case KindNotFramed:
			ev.Value = event(id, ts, "INFO", svc, rec["message"].(string), user, rec["latency_ms"].(float64))
			return ev
		case KindUnknownID:
			schemaID = g.id + 1_000_000
		case KindAvroTruncated:
			payload = payload[:len(payload)/2]
		}
	}
	var h sr.ConfluentHeader
	frame, err := h.AppendEncode(nil, schemaID, nil)
	if err != nil {
		panic("gen: a Confluent header: " + err.Error())
	}
	ev.Value = append(frame, payload...)
	return ev
}
