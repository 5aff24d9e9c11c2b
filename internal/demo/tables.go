package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/plan"
)

// demoMerchants is how many rows the demo writes to each lookup table;
// the payments name a few more merchants than that, so some miss.
const demoMerchants = 100

// tableTopics are the topics of a topology's tables, created with the
// embedded cluster.
func tableTopics(cfg *config.Config) []string {
	out := make([]string, 0, len(cfg.Tables))
	for _, t := range cfg.Tables {
		out = append(out, t.Topic)
	}
	return out
}

// writeTables writes every table's rows before the router starts, so it
// loads them first: merchants m-00 to m-99, every fifth VIP, each in a
// region, valid since the epoch (an as_of table's time field).
func writeTables(ctx context.Context, brokers []string, top *plan.Plan) error {
	if len(top.Tables) == 0 {
		return nil
	}
	var recs []*kgo.Record
	for _, t := range top.Tables {
		for i := range demoMerchants {
			id := fmt.Sprintf("m-%02d", i)
			tier := "basic"
			if i%5 == 0 {
				tier = "vip"
			}
			row := fmt.Sprintf(`"tier":%q,"region":%q`, tier, []string{"eu", "us", "apac"}[i%3])
			if t.Key != "" {
				row = fmt.Sprintf(`%q:%q,`, t.Key, id) + row
			}
			if t.Time != "" {
				row += fmt.Sprintf(`,%q:0`, t.Time)
			}
			recs = append(recs, &kgo.Record{Topic: t.Topic, Key: []byte(id), Value: []byte("{" + row + "}"), Timestamp: time.UnixMilli(0)})
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("demo: write the tables: %w", err)
	}
	return nil
}

// payments is the generator of a topology with tables: payments of
// merchants m-00 to m-119 (the last twenty unknown to the table).
func payments(seed uint64) func() gen.Event {
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	base := time.Now().UnixMilli()
	i := 0
	return func() gen.Event {
		i++
		id := fmt.Sprintf("p-%d", i)
		ts := base + int64(i)
		v := fmt.Sprintf(`{"id":%q,"merchant_id":"m-%02d","amount":%d,"ts":%d}`, id, rng.IntN(demoMerchants+20), 1+rng.IntN(500), ts)
		return gen.Event{ID: id, Key: []byte(id), Value: []byte(v), Kind: "payment", TS: ts}
	}
}
