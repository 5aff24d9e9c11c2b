package wire

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Value is the value of the first header keyed k in hs, and whether there
// is one.
func Value(hs []kgo.RecordHeader, k string) ([]byte, bool) {
	for i := range hs {
		if hs[i].Key == k {
			return hs[i].Value, true
		}
	}
	return nil, false
}

// String is the value of the first header keyed k in hs ("": none).
func String(hs []kgo.RecordHeader, k string) string {
	for i := range hs {
		if hs[i].Key == k {
			return string(hs[i].Value)
		}
	}
	return ""
}

// Int is the first header keyed k in hs read as a base-10 int64, and
// whether there is one and it is a number.
func Int(hs []kgo.RecordHeader, k string) (int64, bool) {
	for i := range hs {
		if hs[i].Key == k {
			return ParseInt(hs[i].Value)
		}
	}
	return 0, false
}

// Reasons are the router's headers on one record, decoded: why it is on
// a side route, where it came from, and its redrive marks.
type Reasons struct {
	// Dirty route: error, reason code and stage.
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
	Stage  string `json:"stage,omitempty"`
	// Source is where the input record was: topic, partition, offset.
	SourceTopic     string `json:"source_topic,omitempty"`
	SourcePartition *int64 `json:"source_partition,omitempty"`
	SourceOffset    *int64 `json:"source_offset,omitempty"`
	SourceTimestamp *int64 `json:"source_timestamp,omitempty"` // epoch ms
	ApplicationID   string `json:"application_id,omitempty"`
	// TruncatedFrom is the size of key and value before the router cut
	// them to fit (0: not cut).
	TruncatedFrom int64 `json:"truncated_from,omitempty"`

	// Late route: the window route, the watermark the record met, the
	// windows it missed and how late it was.
	LateRoute     string `json:"late_route,omitempty"`
	LateWatermark *int64 `json:"late_watermark,omitempty"` // epoch ms
	LateWindows   string `json:"late_windows,omitempty"`
	LateByMs      *int64 `json:"late_by_ms,omitempty"`
	// EventTime is the event time the router extracted, when it carries
	// it (window routes), epoch ms.
	EventTime *int64 `json:"event_time,omitempty"`

	// Assembly side routes: the assembly route, the parts held and the
	// required parts missing (incomplete), whether it completed, and the
	// completed ID a duplicate part belongs to.
	AssemblyRoute string `json:"assembly_route,omitempty"`
	AssemblyParts string `json:"assembly_parts,omitempty"`
	Missing       string `json:"missing_parts,omitempty"`
	Complete      string `json:"complete,omitempty"`
	DuplicateOf   string `json:"duplicate_of,omitempty"`
	// Evicted: an incomplete assembly emitted before its TTL because the
	// route's task was full (limits.on_overflow: evict).
	Evicted bool `json:"evicted,omitempty"`

	// Overflow route: the route whose state limit refused the record,
	// the limit (max_entries, max_bytes), its bound and the task's size.
	OverflowRoute string `json:"overflow_route,omitempty"`
	OverflowLimit string `json:"overflow_limit,omitempty"`
	OverflowMax   *int64 `json:"overflow_max,omitempty"`
	OverflowSize  *int64 `json:"overflow_size,omitempty"`

	// Redrive marks of a record re-injected by router redrive.
	RedriveOrigin string `json:"redrive_origin,omitempty"`
	RedriveRun    string `json:"redrive_run,omitempty"`
	RedriveReason string `json:"redrive_reason,omitempty"`
	RedriveCount  int64  `json:"redrive_count,omitempty"`
}

// Decode reads the router's headers of hs; other headers are ignored. A
// repartition envelope reads as the headers it stands for
// (ExpandRepartition).
func Decode(hs []kgo.RecordHeader) Reasons {
	hs = ExpandRepartition(hs)
	var r Reasons
	num := func(v []byte) *int64 {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return nil
		}
		return &n
	}
	for _, h := range hs {
		v := string(h.Value)
		switch h.Key {
		case HeaderError:
			r.Error = v
		case HeaderReason:
			r.Reason = v
		case HeaderStage:
			r.Stage = v
		case HeaderTopic:
			r.SourceTopic = v
		case HeaderPartition:
			r.SourcePartition = num(h.Value)
		case HeaderOffset:
			r.SourceOffset = num(h.Value)
		case HeaderTimestamp:
			r.SourceTimestamp = num(h.Value)
		case HeaderAppID:
			r.ApplicationID = v
		case HeaderTruncated:
			if n := num(h.Value); n != nil {
				r.TruncatedFrom = *n
			}
		case HeaderLateRoute:
			r.LateRoute = v
		case HeaderLateWM:
			r.LateWatermark = num(h.Value)
		case HeaderLateWins:
			r.LateWindows = v
		case HeaderLateBy:
			r.LateByMs = num(h.Value)
		case HeaderEventTime:
			r.EventTime = num(h.Value)
		case HeaderAssemblyRoute:
			r.AssemblyRoute = v
		case HeaderAssemblyParts:
			r.AssemblyParts = v
		case HeaderMissing:
			r.Missing = v
		case HeaderComplete:
			r.Complete = v
		case HeaderDuplicateOf:
			r.DuplicateOf = v
		case HeaderAssemblyEvicted:
			r.Evicted = v == "true"
		case HeaderOverflowRoute:
			r.OverflowRoute = v
		case HeaderOverflowLimit:
			r.OverflowLimit = v
		case HeaderOverflowMax:
			r.OverflowMax = num(h.Value)
		case HeaderOverflowSize:
			r.OverflowSize = num(h.Value)
		case HeaderRedriveOrigin:
			r.RedriveOrigin = v
		case HeaderRedriveRun:
			r.RedriveRun = v
		case HeaderRedriveReason:
			r.RedriveReason = v
		case HeaderRedriveCount:
			if n := num(h.Value); n != nil {
				r.RedriveCount = *n
			}
		}
	}
	return r
}

// IsLate reports whether the record is on a late route.
func (r Reasons) IsLate() bool { return r.LateRoute != "" }

// Code is the short reason: the dirty reason code, "late", "incomplete",
// "duplicate", or "".
func (r Reasons) Code() string {
	switch {
	case r.Reason != "":
		return r.Reason
	case r.IsLate():
		return "late"
	case r.OverflowRoute != "":
		return "overflow"
	case r.DuplicateOf != "":
		return "duplicate"
	case r.Missing != "":
		return "incomplete"
	}
	return ""
}

// Source is "topic[partition]@offset" of the input record, or "".
func (r Reasons) Source() string {
	if r.SourceTopic == "" {
		return ""
	}
	s := r.SourceTopic
	if r.SourcePartition != nil {
		s += fmt.Sprintf("[%d]", *r.SourcePartition)
	}
	if r.SourceOffset != nil {
		s += fmt.Sprintf("@%d", *r.SourceOffset)
	}
	return s
}

// Lines are the reasons as a person reads them, one fact per line, in
// the order: why, where from, redrive history.
func (r Reasons) Lines() []string {
	var out []string
	if r.Reason != "" {
		l := "reason: " + r.Reason
		if r.Stage != "" {
			l += " (stage " + r.Stage + ")"
		}
		if r.Error != "" {
			l += ": " + r.Error
		}
		out = append(out, l)
	}
	if r.IsLate() {
		l := "late: window route " + r.LateRoute
		if r.LateByMs != nil {
			l += ", " + (time.Duration(*r.LateByMs) * time.Millisecond).String() + " behind the watermark"
		}
		if r.LateWatermark != nil {
			l += " " + FormatMillis(*r.LateWatermark)
		}
		if r.LateWindows != "" {
			l += "; missed window " + FormatSpans(r.LateWindows)
		}
		out = append(out, l)
	}
	if r.OverflowRoute != "" {
		l := "overflow: route " + r.OverflowRoute + "'s task was full"
		if r.OverflowLimit != "" && r.OverflowMax != nil && r.OverflowSize != nil {
			l += fmt.Sprintf(" (%s %d, at %d)", r.OverflowLimit, *r.OverflowMax, *r.OverflowSize)
		}
		out = append(out, l)
	}
	switch {
	case r.DuplicateOf != "":
		out = append(out, fmt.Sprintf("duplicate: a part of %s, which assembly route %s completed already", r.DuplicateOf, r.AssemblyRoute))
	case r.Missing != "":
		l := "incomplete: assembly route " + r.AssemblyRoute + " timed out missing " + r.Missing
		if r.Evicted {
			l = "incomplete: assembly route " + r.AssemblyRoute + " evicted it early (its task was full) missing " + r.Missing
		}
		if r.AssemblyParts != "" {
			l += "; held " + r.AssemblyParts
		}
		out = append(out, l)
	}
	if s := r.Source(); s != "" {
		out = append(out, "source: "+s)
	}
	if r.TruncatedFrom > 0 {
		out = append(out, fmt.Sprintf("truncated: key and value were %d bytes; this record holds a prefix", r.TruncatedFrom))
	}
	if r.RedriveOrigin != "" {
		l := fmt.Sprintf("redriven: %d time(s), last from %s", r.RedriveCount, r.RedriveOrigin)
		if r.RedriveReason != "" {
			l += " (was " + r.RedriveReason + ")"
		}
		if r.RedriveRun != "" {
			l += " by run " + r.RedriveRun
		}
		out = append(out, l)
	}
	return out
}

// spanRe matches one window of the sidestream.late.windows header,
// [start,end) in epoch milliseconds.
var spanRe = regexp.MustCompile(`\[(-?\d+),(-?\d+)\)`)

// FormatSpans renders the windows of a sidestream.late.windows header as
// RFC 3339 times: [2026-09-21T14:00:00.000Z, 2026-09-21T14:01:00.000Z).
func FormatSpans(s string) string {
	return spanRe.ReplaceAllStringFunc(s, func(m string) string {
		p := spanRe.FindStringSubmatch(m)
		a, errA := strconv.ParseInt(p[1], 10, 64)
		b, errB := strconv.ParseInt(p[2], 10, 64)
		if errA != nil || errB != nil {
			return m
		}
		return "[" + FormatMillis(a) + ", " + FormatMillis(b) + ")"
	})
}

// FormatMillis prints epoch ms as RFC 3339 UTC with milliseconds.
func FormatMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// UserHeaders are the headers that are not the router's (sidestream.*).
func UserHeaders(hs []kgo.RecordHeader) []kgo.RecordHeader {
	var out []kgo.RecordHeader
	for _, h := range hs {
		if !strings.HasPrefix(h.Key, HeaderPrefix) {
			out = append(out, h)
		}
	}
	return out
}
