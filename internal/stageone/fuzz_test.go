package stageone

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/wire"
)

// fuzzDecoders decode with every event-time format, the example schema
// and fields of every JSON type referenced.
func fuzzDecoders(t testing.TB) map[string]*decoder {
	fields := `routes: [{name: all, topic: out, when: 'level == "x" || o != nil || user_id != nil || flag != nil'}]` + "\n"
	return map[string]*decoder{
		"epoch_ms": newDecoder(topo(t, tsMillis, fields)),
		"epoch_s":  newDecoder(topo(t, tsSecs, fields)),
		"rfc3339":  newDecoder(topo(t, tsRFC3339, fields)),
		"kafka":    newDecoder(topo(t, tsKafka, fields)),
		"nested":   newDecoder(topo(t, tsNested, fields)),
		"schema":   newDecoder(topo(t, withSchema, tsMillis, fields)),
	}
}

var decodeReasons = map[string]bool{
	wire.StageDecode + "/" + wire.ReasonNullValue: true, wire.StageDecode + "/" + wire.ReasonEmptyValue: true,
	wire.StageDecode + "/" + wire.ReasonInvalidUTF8: true, wire.StageDecode + "/" + wire.ReasonInvalidJSON: true,
	wire.StageDecode + "/" + wire.ReasonNotObject: true, wire.StageSchema + "/" + wire.ReasonSchema: true,
	wire.StageEventTime + "/" + wire.ReasonMissingTime: true, wire.StageEventTime + "/" + wire.ReasonBadTime: true,
}

// FuzzDecode checks the decoder against encoding/json: a value it accepts
// is valid JSON holding an object, one it calls invalid JSON is invalid
// for encoding/json too (or nests past its 10000 levels), and an event
// time is always within years 0001-9999 and agrees with float64 to 1 ms.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), int64(1_700_000_000_000))
	}
	decs := fuzzDecoders(f)
	f.Fuzz(func(t *testing.T, value []byte, ts int64) {
		recTime := time.UnixMilli(ts)
		for name, dec := range decs {
			d, rerr := dec.decode("in", value, recTime)
			if rerr != nil {
				if !decodeReasons[rerr.Stage+"/"+rerr.Reason] {
					t.Fatalf("%s: unexpected %s/%s: %v", name, rerr.Stage, rerr.Reason, rerr.Err)
				}
				if msg := rerr.Err.Error(); msg == "" || !utf8.ValidString(msg) {
					t.Fatalf("%s: message %q is empty or not UTF-8", name, msg)
				}
				if rerr.Reason == wire.ReasonInvalidJSON && json.Valid(value) {
					t.Fatalf("%s: invalid_json (%v) for a value encoding/json accepts", name, rerr.Err)
				}
				if rerr.Reason == wire.ReasonNotObject && (!json.Valid(value) && depth(value) <= 10000 || bytes.HasPrefix(bytes.TrimLeft(value, jsonSpace), []byte("{"))) {
					t.Fatalf("%s: not_object for %q", name, value)
				}
				continue
			}
			if !utf8.Valid(value) || (!json.Valid(value) && depth(value) <= 10000) {
				t.Fatalf("%s: accepted a value encoding/json rejects: %q", name, value)
			}
			if !bytes.HasPrefix(bytes.TrimLeft(value, jsonSpace), []byte("{")) {
				t.Fatalf("%s: accepted a value that is not an object: %q", name, value)
			}
			if name == "kafka" {
				if d.EventTime != ts {
					t.Fatalf("kafka: event time %d, record timestamp %d", d.EventTime, ts)
				}
				continue
			}
			if d.EventTime < minEventMillis || d.EventTime > maxEventMillis {
				t.Fatalf("%s: event time %d outside years 0001-9999", name, d.EventTime)
			}
			if name == "epoch_ms" || name == "epoch_s" {
				raw := gjson.GetBytes(value, "ts").Raw
				if raw == "" || strings.Count(string(value), "ts") > 1 {
					continue // repeated or escaped: last wins, gjson.Get takes the first
				}
				f, _ := strconv.ParseFloat(raw, 64)
				if name == "epoch_s" {
					f *= 1000
				}
				if diff := math.Abs(float64(d.EventTime) - math.Floor(f)); diff > 1 {
					t.Fatalf("%s: %s gave %d ms, float64 says %.3f", name, raw, d.EventTime, f)
				}
			}
		}
	})
}

// depth is how deep value nests, outside strings.
func depth(value []byte) int {
	d, maxD, inStr, esc := 0, 0, false, false
	for _, c := range value {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '[' || c == '{':
			d++
			maxD = max(maxD, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return maxD
}

// FuzzProcess runs arbitrary records through every property topology and
// checks conservation and the dirty contract for each.
func FuzzProcess(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), []byte("k1"), "h", []byte("v"), int32(3), int64(42), int64(1_700_000_000_000))
	}
	f.Add([]byte(good), []byte(nil), "", []byte(nil), int32(-1), int64(-1), int64(math.MinInt64))
	f.Add([]byte(`{"ts":1,"level":"INFO"}`), bytes.Repeat([]byte("k"), 3000), "big", bytes.Repeat([]byte("h"), 3000), int32(0), int64(0), int64(0))
	tops := propertyTopologies(f)
	engines := make([]*Engine, len(tops))
	for i, top := range tops {
		engines[i] = New(top)
	}
	f.Fuzz(func(t *testing.T, value, key []byte, hkey string, hval []byte, partition int32, offset, ts int64) {
		for i, e := range engines {
			for _, topic := range []string{tops[i].Inputs[0].Topic, "not-an-input"} {
				r := &kgo.Record{Topic: topic, Partition: partition, Offset: offset, Key: key, Value: value, Timestamp: time.UnixMilli(ts)}
				if hkey != "" || hval != nil {
					r.Headers = []kgo.RecordHeader{{Key: hkey, Value: hval}}
				}
				tally := metrics.NewTally()
				outs := e.Process(r, tally)
				checkConserved(t, tops[i], r, outs, tally)
				checkOutputs(t, tops[i], r, outs, tally)
			}
		}
	})
}
