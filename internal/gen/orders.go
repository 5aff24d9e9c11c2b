package gen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Order kinds: how the example late-orders topology must treat them.
const (
	OrderOnTime    = "on_time"    // within max_out_of_orderness
	OrderLateGrace = "late_grace" // minutes late, inside the grace: updates a fired window
	OrderTooLate   = "too_late"   // past the grace: the late route
	OrderBad       = "bad"        // not JSON: dirty
)

// Orders generates order events whose event time advances 5 ms per
// order; 3% arrive minutes late inside a 5-minute grace, 1% past it
// (the seed-001 scenario), and 0.5% are malformed.
type Orders struct {
	rng  *rand.Rand
	Base int64
	n    int64
}

// NewOrders returns an order generator.
func NewOrders(seed uint64) *Orders {
	return &Orders{rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), Base: 1_790_000_000_000}
}

var regions = []string{"eu-west", "eu-central", "us-east", "ap-south"}

// Next returns the next order.
func (o *Orders) Next() Event {
	o.n++
	id := "o-" + strconv.FormatInt(o.n, 10)
	ts := o.Base + o.n*5 - o.rng.Int64N(2000)
	kind := OrderOnTime
	switch r := o.rng.Float64(); {
	case r < 0.005:
		return Event{ID: id, Key: []byte(id), Kind: OrderBad, Value: fmt.Appendf(nil, `{"order_id":%q,"amount":`, id)}
	case r < 0.015:
		kind, ts = OrderTooLate, ts-int64(7+o.rng.IntN(20))*60_000
	case r < 0.045:
		kind, ts = OrderLateGrace, ts-int64(60_000+o.rng.IntN(150_000))
	}
	region := regions[o.rng.IntN(len(regions))]
	amount := float64(500+o.rng.IntN(50000)) / 100
	v := fmt.Appendf(nil, `{"order_id":%q,"ts":%d,"customer":"c-%d","region":%q,"amount":%.2f,"currency":"EUR","items":%d}`,
		id, ts, o.rng.IntN(5000), region, amount, 1+o.rng.IntN(5))
	return Event{ID: id, Key: []byte(id), Value: v, Kind: kind, TS: ts}
}
