package topotest

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/plan"
)

// TableRow is one row of a lookup table a test gives: written to the
// table's topic before the router starts, so the table is loaded with it.
type TableRow struct {
	Key *string `yaml:"key"` // the Kafka key; default none (a key field keys the row)
	// Value: a string is written as is; anything else as JSON; null is a
	// tombstone.
	Value     yaml.Node `yaml:"value"`
	Timestamp int64     `yaml:"timestamp"` // epoch ms; default the broker's
}

var (
	reTableRow = regexp.MustCompile(`^(tests\[\d+\]\.)?tables\.[^.]+\[\d+\]$`)
	tableKeys  = []string{"key", "value", "timestamp"}
)

// checkTables: every table a file or case gives rows of is declared by
// the topology.
func checkTables(tf *File, top *plan.Plan, add func(path, format string, args ...any)) {
	check := func(prefix string, tables map[string][]TableRow) {
		for _, name := range sortedKeys(tables) {
			if top.Table(name) == nil {
				add(prefix+"tables."+name, "tables: the topology has no table %q", name)
			}
		}
	}
	check("", tf.Tables)
	for _, tc := range tf.Tests {
		check(fmt.Sprintf("tests[%d].", tc.index), tc.Tables)
	}
}

// writeTables writes the file's rows, then the case's, to their tables'
// topics, in order.
func writeTables(ctx context.Context, brokers []string, top *plan.Plan, rows ...map[string][]TableRow) error {
	var recs []*kgo.Record
	for _, m := range rows {
		for _, name := range sortedKeys(m) {
			t := top.Table(name)
			if t == nil {
				return fmt.Errorf("tables: the topology has no table %q", name)
			}
			for i, r := range m[name] {
				v, err := nodeBytes(&r.Value)
				if err != nil {
					return fmt.Errorf("tables.%s[%d]: value: %w", name, i, err)
				}
				rec := &kgo.Record{Topic: t.Topic, Value: v}
				if r.Key != nil {
					rec.Key = []byte(*r.Key)
				}
				if r.Timestamp != 0 {
					rec.Timestamp = time.UnixMilli(r.Timestamp)
				}
				recs = append(recs, rec)
			}
		}
	}
	if len(recs) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		return err
	}
	defer cl.Close()
	return cl.ProduceSync(ctx, recs...).FirstErr()
}
