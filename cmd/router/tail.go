package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/show"
	"github.com/sidestream/sidestream/internal/sideroute"
	"github.com/sidestream/sidestream/internal/wire"
)

// tailFlags are the flags of `router tail`.
type tailFlags struct {
	config, route, format, brokers string
	follow, fromBeginning          bool
	lines, maxValue                int
}

func cmdTail(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router tail", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f tailFlags
	fs.StringVar(&f.config, "config", os.Getenv("SIDESTREAM_CONFIG"), "topology file (env SIDESTREAM_CONFIG)")
	fs.StringVar(&f.route, "route", "", "route to read: a route name, dirty, or WINDOW.late (late when there is one)")
	fs.StringVar(&f.format, "format", "table", "table (for people) or json (one object per line)")
	fs.StringVar(&f.brokers, "brokers", "", "comma-separated brokers, overriding the file and SIDESTREAM_BROKERS")
	fs.BoolVar(&f.follow, "follow", false, "keep printing new records until interrupted")
	fs.BoolVar(&f.fromBeginning, "from-beginning", false, "every record of the topic, not only the last --lines of each partition")
	fs.IntVar(&f.lines, "lines", 10, "records per partition to print without --from-beginning (0 with --follow: only new records)")
	fs.IntVar(&f.maxValue, "max-value", 2048, "bytes of each value shown; longer values are cut (0: no limit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("router tail: unexpected argument %q (flags only)", fs.Arg(0))}
	}
	if f.format != "table" && f.format != "json" {
		return exitError{code: 2, msg: fmt.Sprintf("router tail: --format %q: use table or json", f.format)}
	}
	if f.lines < 0 || f.lines == 0 && !f.follow {
		return exitError{code: 2, msg: "router tail: --lines must be at least 1 (0 with --follow: only new records)"}
	}
	if f.maxValue < 0 {
		return exitError{code: 2, msg: "router tail: --max-value must not be negative"}
	}
	top, err := loadTopology(f.config, brokerOverrides(f.brokers), false)
	if err != nil {
		return err
	}
	target, err := sideroute.Resolve(top, f.route)
	if err != nil {
		return exitError{code: 2, msg: "router tail: --route: " + err.Error()}
	}
	copts, err := kclient.SecurityOpts(top.Settings.Security)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p := tailPrinter{w: stdout, top: top, f: f}
	err = sideroute.Read(ctx, sideroute.ReadOptions{
		Brokers: top.Settings.Brokers, ClientOpts: copts, Topic: target.Topic,
		FromBeginning: f.fromBeginning, Last: f.lines, Follow: f.follow,
	}, p.print)
	if errors.Is(err, sideroute.ErrNoTopic) {
		return exitError{code: 1, msg: fmt.Sprintf("router tail: route %s: topic %s does not exist yet (the router creates it when it starts)", target.Name, target.Topic)}
	}
	return err
}

// brokerOverrides are the environment's overrides plus --brokers.
func brokerOverrides(brokers string) config.Overrides {
	var p config.Overrides
	if brokers != "" {
		p.Brokers = strings.Split(brokers, ",")
	}
	return config.OverridesFromEnv(os.Getenv).Merge(p)
}

// tailRecord is one record as `router tail --format json` prints it.
type tailRecord struct {
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

type tailPrinter struct {
	w   io.Writer
	top *plan.Plan
	f   tailFlags
	// planned records are not written yet: no partition or offset.
	planned bool
}

func (p tailPrinter) record(r *kgo.Record) tailRecord {
	t := tailRecord{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Timestamp: wire.FormatMillis(r.Timestamp.UnixMilli()),
		Reasons:   wire.Decode(r.Headers),
		shown:     show.Render(r.Value, p.f.maxValue),
	}
	t.Value, t.ValueKind, t.ValueBytes, t.ValueTruncated = jsonValue(r.Value, t.shown), t.shown.Kind, t.shown.Bytes, t.shown.Truncated
	t.Reason = t.Reasons.Code()
	if r.Key != nil {
		k := show.Render(r.Key, 256)
		t.Key = &k
	}
	if et, ok := sideroute.EventTime(p.top, r); ok {
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

func (p tailPrinter) print(r *kgo.Record) error {
	t := p.record(r)
	if p.f.format == "json" {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.w, "%s\n", b)
		return err
	}
	var b strings.Builder
	where := fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)
	if p.planned {
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
		desc += fmt.Sprintf(", first %d shown", p.f.maxValue)
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
	_, err := io.WriteString(p.w, b.String())
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
