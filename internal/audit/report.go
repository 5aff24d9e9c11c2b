package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteJSON writes the report as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a person: the topic, then one block per
// sink with its counts and the first keys of each drift.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "topic %s: %d records, %d keys, %d deleted by tombstones", r.Topic, r.Records, r.Keys, r.Tombstones)
	if r.SplitKeys > 0 {
		fmt.Fprintf(&b, ", %d keys on more than one partition (their latest value is not defined)", r.SplitKeys)
	}
	b.WriteString("\n")
	for _, s := range r.Sinks {
		verdict := "consistent"
		if s.Missing.Count+s.Extra.Count+s.Different.Count > 0 {
			verdict = "DRIFT"
		}
		fmt.Fprintf(&b, "%s %s: %s: %d read, %d same, %d missing, %d extra, %d different\n",
			s.Sink, s.Target, verdict, s.Read, s.Same, s.Missing.Count, s.Extra.Count, s.Different.Count)
		writeDrift(&b, "missing", s.Missing)
		writeDrift(&b, "extra", s.Extra)
		writeDrift(&b, "different", s.Different)
		if len(s.Versions) > 0 {
			vs := make([]int64, 0, len(s.Versions))
			for v := range s.Versions {
				vs = append(vs, v)
			}
			sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
			b.WriteString("  documents by _version:")
			for _, v := range vs {
				fmt.Fprintf(&b, " %d:%d", v, s.Versions[v])
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeDrift(b *strings.Builder, kind string, d Drift) {
	for _, k := range d.Keys {
		fmt.Fprintf(b, "  %s %q", kind, k)
		if f := d.Fields[k]; len(f) > 0 {
			fmt.Fprintf(b, " (fields %s)", strings.Join(f, ", "))
		}
		b.WriteString("\n")
	}
	if n := d.Count - int64(len(d.Keys)); n > 0 {
		fmt.Fprintf(b, "  ... %d more %s\n", n, kind)
	}
}
