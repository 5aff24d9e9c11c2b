package wire

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func hdrs(kv ...string) []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	for i := 0; i+1 < len(kv); i += 2 {
		hs = append(hs, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return hs
}

func ptr(n int64) *int64 { return &n }

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name string
		hs   []kgo.RecordHeader
		want Reasons
		code string
	}{
		{"none", nil, Reasons{}, ""},
		{"user headers only", hdrs("trace", "x", "sidestreamish", "y"), Reasons{}, ""},
		{"dirty", hdrs(HeaderError, "bad json", HeaderReason, ReasonInvalidJSON, HeaderStage, StageDecode,
			HeaderTopic, "logs", HeaderPartition, "3", HeaderOffset, "17", HeaderTimestamp, "1700000000000",
			HeaderAppID, "app", HeaderTruncated, "2048"),
			Reasons{Error: "bad json", Reason: "invalid_json", Stage: "decode", SourceTopic: "logs", SourcePartition: ptr(3),
				SourceOffset: ptr(17), SourceTimestamp: ptr(1700000000000), ApplicationID: "app", TruncatedFrom: 2048}, "invalid_json"},
		{"numbers that are not numbers are absent", hdrs(HeaderPartition, "three", HeaderOffset, "", HeaderTruncated, "1e3",
			HeaderRedriveCount, " 2", HeaderLateBy, "9223372036854775808"), Reasons{}, ""},
		{"negative numbers", hdrs(HeaderTimestamp, "-5", HeaderLateWM, "-1"), Reasons{SourceTimestamp: ptr(-5), LateWatermark: ptr(-1)}, ""},
		{"late", hdrs(HeaderLateRoute, "revenue", HeaderLateWM, "60000", HeaderLateWins, "[0,60000)", HeaderLateBy, "61000", HeaderEventTime, "-1000"),
			Reasons{LateRoute: "revenue", LateWatermark: ptr(60000), LateWindows: "[0,60000)", LateByMs: ptr(61000), EventTime: ptr(-1000)}, "late"},
		{"overflow", hdrs(HeaderOverflowRoute, "per_user", HeaderOverflowLimit, "max_entries", HeaderOverflowMax, "10", HeaderOverflowSize, "10"),
			Reasons{OverflowRoute: "per_user", OverflowLimit: "max_entries", OverflowMax: ptr(10), OverflowSize: ptr(10)}, "overflow"},
		{"incomplete, evicted", hdrs(HeaderAssemblyRoute, "orders", HeaderAssemblyParts, "lines", HeaderMissing, "customer",
			HeaderComplete, "false", HeaderAssemblyEvicted, "true"),
			Reasons{AssemblyRoute: "orders", AssemblyParts: "lines", Missing: "customer", Complete: "false", Evicted: true}, "incomplete"},
		{"evicted is only true", hdrs(HeaderAssemblyEvicted, "TRUE"), Reasons{}, ""},
		{"duplicate", hdrs(HeaderAssemblyRoute, "orders", HeaderDuplicateOf, "o-7"), Reasons{AssemblyRoute: "orders", DuplicateOf: "o-7"}, "duplicate"},
		{"redriven", hdrs(HeaderRedriveOrigin, "logs.dirty/0/4", HeaderRedriveRun, "r1", HeaderRedriveReason, "late", HeaderRedriveCount, "2", HeaderRedriveAt, "5"),
			Reasons{RedriveOrigin: "logs.dirty/0/4", RedriveRun: "r1", RedriveReason: "late", RedriveCount: 2}, ""},
		{"the last of a repeated header wins", hdrs(HeaderReason, "a", HeaderReason, "b", HeaderOffset, "1", HeaderOffset, "x"),
			Reasons{Reason: "b"}, "b"},
		{"a dirty reason comes before late", hdrs(HeaderReason, ReasonBadTime, HeaderLateRoute, "w"), Reasons{Reason: "bad_event_time", LateRoute: "w"}, "bad_event_time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Decode(c.hs)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Decode = %+v\nwant     %+v", got, c.want)
			}
			if got.Code() != c.code {
				t.Fatalf("Code = %q, want %q", got.Code(), c.code)
			}
		})
	}
}

func TestSourceAndLines(t *testing.T) {
	r := Decode(hdrs(HeaderReason, ReasonSchema, HeaderStage, StageSchema, HeaderError, "level: missing",
		HeaderTopic, "logs", HeaderPartition, "1", HeaderOffset, "9", HeaderTruncated, "100",
		HeaderRedriveOrigin, "logs.dirty/1/2", HeaderRedriveCount, "1", HeaderRedriveReason, "schema_violation", HeaderRedriveRun, "r"))
	if s := r.Source(); s != "logs[1]@9" {
		t.Fatalf("Source = %q", s)
	}
	want := []string{
		"reason: schema_violation (stage schema): level: missing",
		"source: logs[1]@9",
		"truncated: key and value were 100 bytes; this record holds a prefix",
		"redriven: 1 time(s), last from logs.dirty/1/2 (was schema_violation) by run r",
	}
	if got := r.Lines(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Lines = %q\nwant    %q", got, want)
	}
	if s := (Reasons{}).Source(); s != "" {
		t.Fatalf("Source of nothing = %q", s)
	}
	if got := FormatMillis(1500); got != "1970-01-01T00:00:01.500Z" {
		t.Fatalf("FormatMillis = %q", got)
	}
}

func TestLookups(t *testing.T) {
	hs := hdrs("a", "1", HeaderEventTime, "42", HeaderEventTime, "43", "empty", "", "bad", "x")
	if v, ok := Value(hs, "a"); !ok || string(v) != "1" {
		t.Fatalf("Value a = %q %v", v, ok)
	}
	if v, ok := Value(hs, "empty"); !ok || len(v) != 0 {
		t.Fatalf("Value empty = %q %v", v, ok)
	}
	if _, ok := Value(hs, "none"); ok {
		t.Fatal("Value of an absent header found")
	}
	if s := String(hs, HeaderEventTime); s != "42" {
		t.Fatalf("String = %q, want the first", s)
	}
	if s := String(hs, "none"); s != "" {
		t.Fatalf("String of an absent header = %q", s)
	}
	for _, c := range []struct {
		k  string
		n  int64
		ok bool
	}{{HeaderEventTime, 42, true}, {"bad", 0, false}, {"empty", 0, false}, {"none", 0, false}} {
		if n, ok := Int(hs, c.k); n != c.n || ok != c.ok {
			t.Errorf("Int %s = %d %v, want %d %v", c.k, n, ok, c.n, c.ok)
		}
	}
}

func TestUserHeaders(t *testing.T) {
	hs := hdrs("trace", "1", HeaderReason, "x", "b", "2", HeaderRedriveOrigin, "o", "Sidestream.upper", "3")
	got := UserHeaders(hs)
	want := hdrs("trace", "1", "b", "2", "Sidestream.upper", "3")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UserHeaders = %v, want %v", got, want)
	}
}

// FuzzDecode: any header decodes without a panic; a numeric header is
// set exactly when its value is a base-10 int64, to that number; and
// UserHeaders keeps every header but the router's, in order.
func FuzzDecode(f *testing.F) {
	for _, s := range [][2]string{
		{HeaderOffset, "17"}, {HeaderPartition, "-1"}, {HeaderRedriveCount, "x"}, {HeaderTruncated, "9223372036854775807"},
		{HeaderLateBy, "+3"}, {HeaderReason, "\xff"}, {"user", "v"}, {HeaderAssemblyEvicted, "true"},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	nums := map[string]func(Reasons) *int64{
		HeaderPartition:    func(r Reasons) *int64 { return r.SourcePartition },
		HeaderOffset:       func(r Reasons) *int64 { return r.SourceOffset },
		HeaderTimestamp:    func(r Reasons) *int64 { return r.SourceTimestamp },
		HeaderLateWM:       func(r Reasons) *int64 { return r.LateWatermark },
		HeaderLateBy:       func(r Reasons) *int64 { return r.LateByMs },
		HeaderEventTime:    func(r Reasons) *int64 { return r.EventTime },
		HeaderOverflowMax:  func(r Reasons) *int64 { return r.OverflowMax },
		HeaderOverflowSize: func(r Reasons) *int64 { return r.OverflowSize },
	}
	f.Fuzz(func(t *testing.T, k string, v []byte) {
		hs := []kgo.RecordHeader{{Key: "user", Value: []byte("u")}, {Key: k, Value: v}}
		r := Decode(hs)
		_ = r.Lines()
		_ = r.Code()
		n, err := strconv.ParseInt(string(v), 10, 64)
		if get, ok := nums[k]; ok {
			switch p := get(r); {
			case err == nil && (p == nil || *p != n):
				t.Fatalf("%s %q decoded as %v, want %d", k, v, p, n)
			case err != nil && p != nil:
				t.Fatalf("%s %q is not a number but decoded as %d", k, v, *p)
			}
		}
		if got, ok := Int(hs, k); k != "user" && (ok != (err == nil) || (ok && got != n)) {
			t.Fatalf("Int %s %q = %d %v", k, v, got, ok)
		}
		us := UserHeaders(hs)
		if strings.HasPrefix(k, HeaderPrefix) != (len(us) == 1) || us[0].Key != "user" {
			t.Fatalf("UserHeaders of %q: %v", k, us)
		}
	})
}
