package sideroute

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/show"
	"github.com/sidestream/sidestream/internal/wire"
)

// Record is one record as `router tail --format json` prints it.
type Record struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Key       *show.Value       `json:"key"` // null for a null key
	Timestamp string            `json:"timestamp"`
	EventTime string            `json:"event_time,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	Reasons   wire.Reasons      `json:"reasons"`
	Headers   map[string]string `json:"headers,omitempty"` // the input's own headers, escaped
	// Value is the value itself when it is JSON (compact, as a JSON
	// value, not a string), else a string: escaped text or hex (see
	// ValueKind); null for a null value.
	Value          json.RawMessage `json:"value"`
	ValueKind      string          `json:"value_kind"` // json, text, binary, empty
	ValueBytes     int             `json:"value_bytes"`
	ValueTruncated bool            `json:"value_truncated,omitempty"` // a prefix of --max-value bytes is shown
	shown          show.Value
}

// jsonValue is the value of a record as --format json writes it.
func jsonValue(b []byte, v show.Value) json.RawMessage {
	switch v.Kind {
	case show.KindJSON:
		var out bytes.Buffer
		if json.Compact(&out, b) == nil {
			return out.Bytes()
		}
	case show.KindEmpty:
		if b == nil {
			return json.RawMessage("null")
		}
		return json.RawMessage(`""`)
	}
	s, _ := json.Marshal(v.Text)
	return s
}

// Printer prints records as `router tail` does, and what `router
// redrive --dry-run` would send.
type Printer struct {
	W        io.Writer
	Plan     *plan.Plan // the topology: the event time of a record
	Format   string     // table (for people) or json (one Record per line)
	MaxValue int        // bytes of each value shown (0: no limit)
	// Planned records are not written yet: no partition or offset.
	Planned bool
}

func (p Printer) record(r *kgo.Record) Record {
	t := Record{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Timestamp: wire.FormatMillis(r.Timestamp.UnixMilli()),
		Reasons:   wire.Decode(r.Headers),
		shown:     show.Render(r.Value, p.MaxValue),
	}
	t.Value, t.ValueKind, t.ValueBytes, t.ValueTruncated = jsonValue(r.Value, t.shown), t.shown.Kind, t.shown.Bytes, t.shown.Truncated
	t.Reason = t.Reasons.Code()
	if r.Key != nil {
		k := show.Render(r.Key, 256)
		t.Key = &k
	}
	if et, ok := EventTime(p.Plan, r); ok {
		t.EventTime = wire.FormatMillis(et)
	}
	for _, h := range wire.UserHeaders(r.Headers) {
		if t.Headers == nil {
			t.Headers = map[string]string{}
		}
		t.Headers[show.Escape(h.Key)] = show.Key(h.Value, 256)
	}
	return t
}

// Print writes one record.
func (p Printer) Print(r *kgo.Record) error {
	t := p.record(r)
	if p.Format == "json" {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.W, "%s\n", b)
		return err
	}
	var b strings.Builder
	where := fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)
	if p.Planned {
		where = "to " + r.Topic
	}
	fmt.Fprintf(&b, "%s  key=%s  event_time=%s  timestamp=%s\n",
		where, show.Key(r.Key, 128), orDash(t.EventTime), t.Timestamp)
	for _, l := range t.Reasons.Lines() {
		fmt.Fprintf(&b, "  %s\n", show.Escape(l))
	}
	for _, h := range wire.UserHeaders(r.Headers) {
		fmt.Fprintf(&b, "  header %s=%s\n", show.Escape(h.Key), show.Key(h.Value, 256))
	}
	v := t.shown
	desc := fmt.Sprintf("%s, %d bytes", v.Kind, v.Bytes)
	if v.Truncated {
		desc += fmt.Sprintf(", first %d shown", p.MaxValue)
	}
	switch v.Kind {
	case show.KindEmpty:
		if r.Value == nil {
			desc = "null"
		}
		fmt.Fprintf(&b, "  value (%s)\n", desc)
	default:
		fmt.Fprintf(&b, "  value (%s):\n", desc)
		text := v.Text
		if v.Kind == show.KindBinary {
			text = wrap(text, 64)
		}
		for _, l := range strings.Split(text, "\n") {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(p.W, b.String())
	return err
}

// wrap cuts s into lines of n bytes (hex: ASCII only).
func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n])
		b.WriteByte('\n')
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
