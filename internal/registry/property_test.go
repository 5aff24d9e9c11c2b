package registry

import (
	"context"
	"encoding/base64"
	"math/big"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"pgregory.net/rapid"
)

const avroProp = `{"type":"record","name":"P","fields":[
 {"name":"id","type":"long"},
 {"name":"n","type":"int"},
 {"name":"f","type":"double"},
 {"name":"s","type":"string"},
 {"name":"b","type":"bytes"},
 {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"]}},
 {"name":"u","type":["null","string","long",{"type":"record","name":"Q","fields":[{"name":"q","type":"long"}]}]},
 {"name":"arr","type":{"type":"array","items":["null","int"]}},
 {"name":"m","type":{"type":"map","values":"double"}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":18,"scale":3}},
 {"name":"d","type":{"type":"int","logicalType":"date"}},
 {"name":"nested","type":{"type":"record","name":"N","fields":[{"name":"x","type":["null",{"type":"long","logicalType":"timestamp-micros"}]}]}}
]}`

// decimalOracle is the value model of unscaled/1000, computed on the
// decimal text: an int when integral, a float64 when it is exact, else
// the text with 3 decimals.
func decimalOracle(unscaled int64) any {
	if unscaled%1000 == 0 {
		return int(unscaled / 1000)
	}
	neg := unscaled < 0
	u := unscaled
	if neg {
		u = -u
	}
	text := strconv.FormatInt(u/1000, 10) + "." + strconv.FormatInt(1000+u%1000, 10)[1:]
	if neg {
		text = "-" + text
	}
	f, _ := strconv.ParseFloat(text, 64)
	exact, _ := new(big.Rat).SetString(text)
	if new(big.Rat).SetFloat64(f).Cmp(exact) == 0 {
		return f
	}
	return text
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// TestAvroRoundTrip: random records of a schema, encoded by hamba,
// framed, decoded: equal to the value model computed from what was
// generated.
func TestAvroRoundTrip(t *testing.T) {
	m := newMem()
	m.add(1, sr.Schema{Schema: avroProp, Type: sr.TypeAvro})
	d := newDecoder(t, newRegistry(t, m), Avro)
	rapid.Check(t, func(t *rapid.T) {
		in, want := map[string]any{}, map[string]any{}
		id := rapid.Int64().Draw(t, "id")
		in["id"], want["id"] = id, int(id)
		n := rapid.Int32().Draw(t, "n")
		in["n"], want["n"] = int(n), int(n)
		f := rapid.Float64Range(-1e15, 1e15).Draw(t, "f")
		in["f"], want["f"] = f, f
		s := rapid.String().Draw(t, "s")
		in["s"], want["s"] = s, s
		b := rapid.SliceOf(rapid.Byte()).Draw(t, "b")
		in["b"], want["b"] = b, base64.StdEncoding.EncodeToString(b)
		e := rapid.SampledFrom([]string{"A", "B", "C"}).Draw(t, "e")
		in["e"], want["e"] = e, e
		switch rapid.IntRange(0, 3).Draw(t, "branch") {
		case 0:
			in["u"], want["u"] = nil, nil
		case 1:
			in["u"], want["u"] = map[string]any{"string": s}, s
		case 2:
			in["u"], want["u"] = map[string]any{"long": id}, int(id)
		default:
			in["u"], want["u"] = map[string]any{"Q": map[string]any{"q": id}}, map[string]any{"q": int(id)}
		}
		var arrIn, arrWant []any
		for _, x := range rapid.SliceOfN(rapid.IntRange(-1, 1000), 0, 20).Draw(t, "arr") {
			if x < 0 {
				arrIn, arrWant = append(arrIn, nil), append(arrWant, nil)
			} else {
				arrIn, arrWant = append(arrIn, map[string]any{"int": x}), append(arrWant, x)
			}
		}
		in["arr"], want["arr"] = append([]any{}, arrIn...), append([]any{}, arrWant...)
		mIn, mWant := map[string]any{}, map[string]any{}
		for k, v := range rapid.MapOfN(rapid.String(), rapid.Float64Range(-1e9, 1e9), 0, 5).Draw(t, "m") {
			mIn[k], mWant[k] = v, v
		}
		in["m"], want["m"] = mIn, mWant
		ts := rapid.Int64Range(minEventMillis, maxEventMillis).Draw(t, "ts")
		in["ts"], want["ts"] = time.UnixMilli(ts).UTC(), int(ts)
		unscaled := rapid.Int64Range(-1e15, 1e15).Draw(t, "dec")
		in["dec"], want["dec"] = big.NewRat(unscaled, 1000), decimalOracle(unscaled)
		days := rapid.Int64Range(-700000, 2900000).Draw(t, "d")
		in["d"], want["d"] = time.Unix(days*86400, 0).UTC(), int(days)
		if rapid.Bool().Draw(t, "has_x") {
			us := rapid.Int64Range(minEventMillis*1000, maxEventMillis*1000).Draw(t, "x")
			in["nested"] = map[string]any{"x": map[string]any{"long.timestamp-micros": time.UnixMicro(us).UTC()}}
			want["nested"] = map[string]any{"x": int(floorDiv(us, 1000))}
		} else {
			in["nested"], want["nested"] = map[string]any{"x": nil}, map[string]any{"x": nil}
		}
		v, err := d.Decode(context.Background(), frame(t, 1, nil, avroEncode(t, avroProp, in)))
		if err != nil {
			t.Fatal(err)
		}
		if len(arrWant) == 0 {
			want["arr"] = []any{}
		}
		if !reflect.DeepEqual(v.Fields, want) {
			for k := range want {
				if !reflect.DeepEqual(v.Fields[k], want[k]) {
					t.Errorf("%s = %#v, want %#v", k, v.Fields[k], want[k])
				}
			}
			t.Fatalf("decoded %v", v.Fields)
		}
	})
}
