package window

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/sidestream/sidestream/internal/changelog"
)

// FuzzOperator decodes arbitrary bytes into a spec and a call sequence.
// The operator must never panic, every record must be exactly one of
// applied, late or rejected (RecordError), every value must be valid
// JSON, revisions of a key must increase and nothing may follow its final
// result or retraction, and after a full drain the applied records must
// all be in final results (conservation) and the state must be empty.
func FuzzOperator(f *testing.F) {
	f.Add([]byte{0, 10, 5, 3, 2, 4, 0, 1, 5, 0, 1, 2, 3, 250, 0, 7, 1, 9, 0, 0})
	f.Add([]byte{1, 10, 3, 3, 0, 0, 1, 1, 5, 0, 1, 2, 1, 100, 1, 2, 0, 0, 1, 3})
	f.Add([]byte{2, 10, 5, 7, 1, 20, 0, 0, 5, 0, 1, 2, 2, 240, 0, 7, 2, 20, 0, 0, 0, 9, 1})
	f.Add([]byte{2, 1, 1, 1, 0, 0, 1, 3, 128, 2, 255, 255, 3, 127, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 7 {
			return
		}
		// At most 2,000 calls: a hopping record may touch 64 windows, and a
		// megabyte input would otherwise take the fuzzer's worker for seconds.
		data = data[:min(len(data), 7+3*2000)]
		s := Spec{
			Kind:              Kind(data[0]%3 + 1),
			MaxOutOfOrderness: msd(int64(data[4] % 32)),
			Grace:             msd(int64(data[5] % 64)),
			Emit:              EmitMode(data[6] % 2),
			Aggregations:      []Aggregation{{"n", Count}, {"sum", Sum}, {"last", Last}, {"distinct", DistinctCount}},
		}
		size := int64(data[1]%64) + 1
		switch s.Kind {
		case Tumbling:
			s.Size = msd(size)
		case Hopping:
			s.Size, s.Advance = msd(size), msd(int64(data[2])%size+1)
		case Session:
			s.Gap = msd(int64(data[3]%32) + 1)
		}
		o, err := New(s, changelog.NewMemory())
		if err != nil {
			t.Fatal(err)
		}
		var applied, late, rejected, records int
		revs := map[string]int64{}
		closed := map[string]bool{}
		var finalCount int64
		check := func(out Output) {
			for _, r := range out.Results {
				if closed[r.Key] {
					t.Fatalf("result for %q after its final result or retraction", r.Key)
				}
				if r.Revision <= revs[r.Key] {
					t.Fatalf("revision %d of %q after %d", r.Revision, r.Key, revs[r.Key])
				}
				revs[r.Key] = r.Revision
				closed[r.Key] = r.Final || r.Retract
				if r.Retract {
					continue
				}
				var v struct{ Aggregates map[string]json.RawMessage }
				if err := json.Unmarshal(r.Value, &v); err != nil {
					t.Fatalf("value %q: %v", r.Value, err)
				}
				if r.Final {
					var n int64
					_ = json.Unmarshal(v.Aggregates["n"], &n)
					finalCount += n
				}
			}
		}
		clock := int64(binary.LittleEndian.Uint16(data[1:3]))
		for rest := data[7:]; len(rest) >= 3; rest = rest[3:] {
			kb, tb, vb := rest[0], int8(rest[1]), rest[2]
			switch kb % 8 {
			case 7: // idle advance
				out, err := o.AdvanceWatermark(clock + int64(tb))
				if err != nil {
					t.Fatal(err)
				}
				check(out)
				continue
			case 6: // extreme event times
				clock = []int64{math.MinInt64, MinEventTime, MaxEventTime, math.MaxInt64, 0}[vb%5]
			}
			clock += int64(tb)
			var v any
			switch vb % 8 {
			case 0:
				v = nil
			case 1:
				v = "s" + string(rune(vb))
			case 2:
				v = math.NaN()
			case 3:
				v = float64(int8(vb)) / 8
			case 4:
				v = math.MaxFloat64
			case 5:
				v = []byte{vb}
			default:
				v = int64(int8(vb))
			}
			records++
			key := string([]byte{'k', kb % 3, kb >> 6})
			out, err := o.Process(key, clock, []any{true, v, v, v})
			var re *RecordError
			switch {
			case errors.As(err, &re):
				rejected++
			case err != nil:
				t.Fatal(err)
			case out.Late != nil:
				late++
				if out.Late.LateBy < 0 || len(out.Late.Windows) == 0 || len(out.Results) != 0 {
					t.Fatalf("late %+v", out)
				}
			default:
				applied++
			}
			check(out)
		}
		out, err := o.AdvanceWatermark(math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		check(out)
		if applied+late+rejected != records {
			t.Fatalf("applied %d + late %d + rejected %d != %d", applied, late, rejected, records)
		}
		if o.OpenWindows() != 0 {
			t.Fatalf("%d windows after drain", o.OpenWindows())
		}
		perRecord := int64(1)
		if s.Kind == Hopping {
			perRecord = (size + s.Advance.Milliseconds() - 1) / s.Advance.Milliseconds()
		}
		if finalCount < int64(applied) || finalCount > int64(applied)*perRecord || (perRecord == 1 && finalCount != int64(applied)) {
			t.Fatalf("final counts sum to %d for %d applied records (%d windows each at most)", finalCount, applied, perRecord)
		}
	})
}
