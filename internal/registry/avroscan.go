package registry

import (
	"errors"
	"fmt"
	"io"

	"github.com/hamba/avro/v2"
)

// avroScan checks a payload's shape against its schema before hamba
// decodes it, allocating nothing. hamba's decoders grow each array to the
// block count the payload declares before reading an item, and its skip
// decoders loop over a declared count without stopping at the end of the
// data: 200 bytes declaring nested arrays of a million items made it
// allocate 610 MB. The scan walks the payload with hamba's Reader,
// charges every array and map item to a budget of one per payload byte
// (an item takes at least one byte, but for null or empty-record items:
// arrays of those longer than the payload are refused), refuses a string
// or bytes longer than the payload, and stops at the first error, so
// the decode after it allocates in proportion to the payload.
func avroScan(s avro.Schema, payload []byte) error {
	sc := &scanner{r: avro.NewReader(nil, 0, avro.WithReaderConfig(avroAPI)).Reset(payload), n: int64(len(payload)), budget: int64(len(payload))}
	sc.value(s, 0)
	if sc.err != nil {
		return sc.err
	}
	if sc.r.Error != nil {
		if errors.Is(sc.r.Error, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return sc.r.Error
	}
	return nil
}

type scanner struct {
	r      *avro.Reader
	n      int64 // payload length
	budget int64 // array and map items left
	err    error
}

func (sc *scanner) failed() bool { return sc.err != nil || sc.r.Error != nil }

func (sc *scanner) fail(format string, args ...any) {
	if sc.err == nil {
		sc.err = fmt.Errorf(format, args...)
	}
}

func (sc *scanner) sized() {
	size := sc.r.ReadLong()
	if size < 0 || size > sc.n {
		sc.fail("a string or bytes of %d bytes in a payload of %d", size, sc.n)
		return
	}
	sc.r.SkipNBytes(int(size))
}

func (sc *scanner) value(s avro.Schema, depth int) {
	if depth > maxDepth {
		sc.fail("nested deeper than %d", maxDepth)
		return
	}
	switch x := s.(type) {
	case *avro.RefSchema:
		sc.value(x.Schema(), depth)
	case *avro.RecordSchema:
		for _, f := range x.Fields() {
			if sc.failed() {
				return
			}
			sc.value(f.Type(), depth+1)
		}
	case *avro.UnionSchema:
		i := sc.r.ReadLong()
		if i < 0 || i >= int64(len(x.Types())) {
			sc.fail("union branch %d of %d", i, len(x.Types()))
			return
		}
		sc.value(x.Types()[i], depth+1)
	case *avro.ArraySchema:
		sc.blocks(func() { sc.value(x.Items(), depth+1) })
	case *avro.MapSchema:
		sc.blocks(func() {
			sc.sized()
			sc.value(x.Values(), depth+1)
		})
	case *avro.EnumSchema:
		if i := sc.r.ReadInt(); i < 0 || int(i) >= len(x.Symbols()) {
			sc.fail("enum %s symbol %d of %d", x.FullName(), i, len(x.Symbols()))
		}
	case *avro.FixedSchema:
		sc.r.SkipNBytes(x.Size())
	case *avro.NullSchema:
	case *avro.PrimitiveSchema:
		sc.primitive(x.Type())
	default:
		sc.fail("unexpected schema %s", s.Type())
	}
}

func (sc *scanner) primitive(t avro.Type) {
	switch t {
	case avro.Boolean:
		sc.r.SkipNBytes(1)
	case avro.Int:
		sc.r.SkipInt()
	case avro.Long:
		sc.r.SkipLong()
	case avro.Float:
		sc.r.SkipNBytes(4)
	case avro.Double:
		sc.r.SkipNBytes(8)
	case avro.String, avro.Bytes:
		sc.sized()
	case avro.Null:
	default:
		sc.fail("unexpected primitive %s", t)
	}
}

// blocks reads an array's or map's blocks, item by item (a block's byte
// size, when given, is not trusted to skip).
func (sc *scanner) blocks(item func()) {
	for !sc.failed() {
		count := sc.r.ReadLong()
		if count == 0 {
			return
		}
		if count < 0 {
			if count == -count { // math.MinInt64
				sc.fail("block count %d", count)
				return
			}
			count = -count
			sc.r.SkipLong() // the block's size in bytes
		}
		if count > sc.budget {
			sc.fail("a block of %d items in a payload of %d bytes", count, sc.n)
			return
		}
		sc.budget -= count
		for ; count > 0 && !sc.failed(); count-- {
			item()
		}
	}
}
