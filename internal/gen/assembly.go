package gen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Part is one generated input record of an assembly example.
type Part struct {
	Topic string
	Key   []byte
	Value []byte
	TS    int64
}

// AssemblyExpect is what an assembly example must produce from the
// generated parts.
type AssemblyExpect struct {
	// Complete holds every ID that must be assembled, with the parts the
	// assembled record must hold at least (optional parts may race).
	Complete map[string][]string
	// Incomplete holds every ID that must expire, with its missing parts.
	Incomplete map[string][]string
	// DuplicateRoute is how many parts must reach the duplicate route
	// (exact for the event-time example).
	DuplicateRoute int
	// Optional is how many optional parts exist for completed IDs: each
	// is either inside the assembled record or on the duplicate route.
	Optional int
	// Dirty is how many records must go to the dirty route, Dropped how
	// many must be dropped (no route, no part).
	Dirty, Dropped int
}

// RepartitionOf is the partition a key lands on in a topic of n
// partitions, as the router's producer places it (Kafka's murmur2).
func RepartitionOf(key string, n int) int {
	return kgo.StickyKeyPartitioner(nil).ForTopic("").Partition(&kgo.Record{Key: []byte(key)}, n)
}

// OrderParts generates the seed-002 stream of examples/assemble-orders.yaml
// on topic order-parts: each order is an X part (lines) and a Y part
// (customer) a few seconds apart in event time, records sorted by event
// time. 8% miss one part (they expire after the 30s TTL), 5% repeat a
// part after completing (duplicate route, within the 10m retention), 1%
// carry an id that is not a string or number (dirty). It ends with one
// complete order per repartition partition far in the future, so every
// task's event-time clock passes every deadline.
func OrderParts(seed uint64, n, partitions int) ([]Part, AssemblyExpect) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	base := int64(1_790_000_000_000)
	exp := AssemblyExpect{Complete: map[string][]string{}, Incomplete: map[string][]string{}}
	var out []Part
	x := func(id string, ts int64) Part {
		v := fmt.Appendf(nil, `{"order_id":%q,"kind":"x","ts":%d,"items":%d,"price":%d,"qty":%d}`, id, ts, 1+rng.IntN(5), 100+rng.IntN(900), 1+rng.IntN(3))
		return Part{Topic: "order-parts", Key: []byte(id), Value: v, TS: ts}
	}
	y := func(id string, ts int64) Part {
		v := fmt.Appendf(nil, `{"order_id":%q,"kind":"y","ts":%d,"customer":"Customer-%d","country":"de"}`, id, ts, rng.IntN(1000))
		return Part{Topic: "order-parts", Key: []byte(id), Value: v, TS: ts}
	}
	for i := range n {
		id := "o-" + strconv.Itoa(i+1)
		t0 := base + int64(i)*100
		tx, ty := t0+rng.Int64N(2000), t0+rng.Int64N(2000)
		switch r := rng.Float64(); {
		case r < 0.01:
			v := fmt.Appendf(nil, `{"order_id":{"nested":%q},"kind":"x","ts":%d,"items":1,"price":1,"qty":1}`, id, tx)
			out = append(out, Part{Topic: "order-parts", Key: []byte(id), Value: v, TS: tx})
			exp.Dirty++
		case r < 0.05:
			out = append(out, x(id, tx))
			exp.Incomplete[id] = []string{"customer"}
		case r < 0.09:
			out = append(out, y(id, ty))
			exp.Incomplete[id] = []string{"lines"}
		case r < 0.14:
			out = append(out, x(id, tx), y(id, ty), x(id, max(tx, ty)+3000))
			exp.Complete[id] = []string{"lines", "customer"}
			exp.DuplicateRoute++
		default:
			out = append(out, x(id, tx), y(id, ty))
			exp.Complete[id] = []string{"lines", "customer"}
		}
	}
	slices.SortStableFunc(out, func(a, b Part) int { return int(a.TS - b.TS) })
	// Flush: a complete order per repartition partition, an hour later.
	far := base + int64(n)*100 + 3_600_000
	covered := map[int]bool{}
	for i := 0; len(covered) < partitions; i++ {
		id := "flush-" + strconv.Itoa(i)
		p := RepartitionOf(id, partitions)
		if covered[p] {
			continue
		}
		covered[p] = true
		out = append(out, x(id, far), y(id, far))
		exp.Complete[id] = []string{"lines", "customer"}
	}
	return out, exp
}

// OrderPaymentShipment generates examples/order-payment-shipment.yaml's
// three topics, each keyed by its own id: an order (id), its payment
// (order_ref; 10% of orders also get a failed payment, which the part's
// predicate drops) and, for 60%, a shipment (for_order). 12% of orders
// never get a captured payment: they expire with payment missing. The
// parts of one order are written together, order first.
func OrderPaymentShipment(seed uint64, n int) ([]Part, AssemblyExpect) {
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	exp := AssemblyExpect{Complete: map[string][]string{}, Incomplete: map[string][]string{}}
	var out []Part
	for i := range n {
		id := "ord-" + strconv.Itoa(i+1)
		amount := 500 + rng.IntN(50000)
		out = append(out, Part{Topic: "orders", Key: []byte(id),
			Value: fmt.Appendf(nil, `{"id":%q,"customer":"c-%d","amount":%d}`, id, rng.IntN(5000), amount)})
		if rng.Float64() < 0.10 {
			pid := fmt.Sprintf("pay-%d-f", i+1)
			out = append(out, Part{Topic: "payments", Key: []byte(pid),
				Value: fmt.Appendf(nil, `{"payment_id":%q,"order_ref":%q,"status":"failed","method":"card","amount":%d}`, pid, id, amount)})
			exp.Dropped++
		}
		ship := rng.Float64() < 0.6
		if ship {
			sid := fmt.Sprintf("shp-%d", i+1)
			out = append(out, Part{Topic: "shipments", Key: []byte(sid),
				Value: fmt.Appendf(nil, `{"shipment_id":%q,"for_order":%q,"carrier":"dhl","tracking":"T%d"}`, sid, id, rng.IntN(1e6))})
		}
		if rng.Float64() < 0.12 {
			exp.Incomplete[id] = []string{"payment"}
			continue
		}
		pid := fmt.Sprintf("pay-%d", i+1)
		out = append(out, Part{Topic: "payments", Key: []byte(pid),
			Value: fmt.Appendf(nil, `{"payment_id":%q,"order_ref":%q,"status":"captured","method":"card","amount":%d}`, pid, id, amount)})
		exp.Complete[id] = []string{"order", "payment"}
		if ship {
			exp.Optional++
		}
	}
	return out, exp
}
