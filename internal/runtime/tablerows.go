package runtime

import (
	"context"
	"time"

	"github.com/sidestream/sidestream/internal/lookup"
	"github.com/sidestream/sidestream/internal/registry"
)

// tableRow is one decoded row of a table's topic: its fields in the value
// model (what lookup() returns), and for a registry format the decoded
// value, whose writer schema says which fields are logical times.
type tableRow struct {
	fields lookup.Row
	value  *registry.Value
}

// versionTime is the as_of version time in field: epoch ms. A logical
// time field of the writer schema (Avro timestamp-*, date; Protobuf
// Timestamp) is read as the time it is; any other as epoch ms, as a JSON
// row's.
func (r tableRow) versionTime(field string) (int64, bool) {
	if r.value != nil {
		if ms, rerr := r.value.EventTime(field, registry.TimeEpochMillis); rerr == nil {
			return ms, true
		}
	}
	return epochMillis(r.fields[field])
}

// Bounds of the wait for a schema registry that cannot answer.
const (
	tableRegistryBackoff    = 100 * time.Millisecond
	tableRegistryBackoffMax = 5 * time.Second
)

// decode reads one row's value: a JSON object, or for a registry format
// the Confluent wire format decoded with its writer schema (as an input's
// records are). An error is the row's own (counted and skipped), or ctx's.
// A registry that cannot answer is not the row's fault: decode waits and
// asks again (with backoff, logged) until it answers or ctx ends, so a
// table never skips a row a registry outage hid.
func (t *table) decode(ctx context.Context, value []byte) (tableRow, error) {
	if t.dec == nil {
		row, err := lookup.Decode(value)
		return tableRow{fields: row}, err
	}
	wait := tableRegistryBackoff
	for {
		v, err := t.dec.Decode(ctx, value)
		if err == nil {
			return tableRow{fields: v.Fields, value: v}, nil
		}
		if !registry.IsRetryable(err) {
			return tableRow{}, err
		}
		t.log.Warn("lookup table: the schema registry cannot answer; waiting to decode the row", "table", t.node.Name, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return tableRow{}, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, tableRegistryBackoffMax)
	}
}
