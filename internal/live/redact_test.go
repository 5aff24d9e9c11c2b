package live

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/wire"
)

func withSamples(t *testing.T, mode string, paths ...string) *State {
	t.Helper()
	top := load(t, "../../examples/late-orders.yaml")
	top.Settings.API.Samples, top.Settings.API.Redact, top.Settings.API.SampleMaxBytes = mode, paths, 1<<20
	return New(top, metrics.New(), Options{Samples: 1000})
}

// hiddenAt collects, by brute force over the decoded tree, the markers
// under every value a path names (lists crossed without an index).
func hiddenAt(v any, segs []string, into map[string]bool) {
	if len(segs) == 0 {
		var all func(any)
		all = func(v any) {
			switch t := v.(type) {
			case string:
				into[t] = true
			case map[string]any:
				for _, c := range t {
					all(c)
				}
			case []any:
				for _, c := range t {
					all(c)
				}
			}
		}
		all(v)
		return
	}
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if segs[0] == "*" || segs[0] == k {
				hiddenAt(c, segs[1:], into)
			}
		}
	case []any:
		for _, c := range t {
			if segs[0] == "*" {
				hiddenAt(c, segs[1:], into)
			} else {
				hiddenAt(c, segs, into)
			}
		}
	}
}

func genDoc(t *rapid.T, depth int, n *int) any {
	k := rapid.IntRange(0, 4).Draw(t, "kind")
	if depth > 3 {
		k = 0
	}
	switch k {
	case 0, 1:
		*n++
		return fmt.Sprintf("SECRET%04dX", *n)
	case 2, 3:
		m := map[string]any{}
		for i := rapid.IntRange(0, 4).Draw(t, "n"); i > 0; i-- {
			m[rapid.SampledFrom([]string{"email", "card", "name", "items", "x"}).Draw(t, "key")] = genDoc(t, depth+1, n)
		}
		return m
	default:
		var l []any
		for i := rapid.IntRange(0, 3).Draw(t, "n"); i > 0; i-- {
			l = append(l, genDoc(t, depth+1, n))
		}
		return l
	}
}

// TestRedactedSamplesProperty: under api.samples: redacted, no value a
// redact path names reaches the view, whether in the value, in a key or
// an error text that quotes it; the other values are shown.
func TestRedactedSamplesProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := 0
		doc := genDoc(rt, 0, &n)
		var paths []string
		for i := rapid.IntRange(1, 3).Draw(rt, "paths"); i > 0; i-- {
			var segs []string
			for j := rapid.IntRange(1, 3).Draw(rt, "segs"); j > 0; j-- {
				segs = append(segs, rapid.SampledFrom([]string{"email", "card", "items", "x", "*"}).Draw(rt, "seg"))
			}
			paths = append(paths, strings.Join(segs, "."))
		}
		s := withSamples(t, config.SamplesRedacted, paths...)
		val, _ := json.Marshal(doc)
		hidden := map[string]bool{}
		for _, p := range paths {
			hiddenAt(doc, strings.Split(p, "."), hidden)
		}
		var quoted string // a hidden value the key and the error quote
		for h := range hidden {
			quoted = h
			break
		}
		s.Sample([]*kgo.Record{{Topic: "orders.dirty", Key: []byte("id-" + quoted), Value: val, Headers: []kgo.RecordHeader{
			{Key: wire.HeaderReason, Value: []byte("schema")},
			{Key: wire.HeaderError, Value: []byte("field has value " + quoted + ", not allowed")},
		}}})
		out, _ := json.Marshal(s.View())
		for h := range hidden {
			if strings.Contains(string(out), h) {
				rt.Fatalf("paths %q: %s shown in %s", paths, h, out)
			}
		}
		var all = map[string]bool{}
		hiddenAt(doc, nil, all)
		for m := range all {
			if !hidden[m] && !strings.Contains(string(out), m) {
				rt.Fatalf("paths %q: %s (not redacted) missing from %s", paths, m, out)
			}
		}
	})
}

func TestSamplesOffAndWithheld(t *testing.T) {
	off := withSamples(t, config.SamplesOff)
	off.Sample([]*kgo.Record{{Topic: "orders.dirty", Value: []byte(`{"email":"a@b"}`)}})
	v := off.View()
	for k, l := range v.Samples {
		if len(l) != 0 {
			t.Errorf("samples off keeps %d %s samples", len(l), k)
		}
	}
	if v.SamplesMode != "off" {
		t.Errorf("mode %q", v.SamplesMode)
	}

	red := withSamples(t, config.SamplesRedacted, "email")
	red.Sample([]*kgo.Record{{Topic: "orders.dirty", Value: []byte(`{"email":"ann@example.com"`), Headers: []kgo.RecordHeader{
		{Key: wire.HeaderReason, Value: []byte("invalid_json")},
		{Key: wire.HeaderError, Value: []byte(`unexpected end after "ann@example.com"`)},
	}}})
	b, _ := json.Marshal(red.View())
	if strings.Contains(string(b), "ann@example.com") {
		t.Errorf("a value that is not JSON leaks: %s", b)
	}
	smp := red.View().Samples["dirty"][0]
	if smp.Value.Kind != KindWithheld || smp.Value.Bytes != 26 || smp.Reason != "invalid_json" {
		t.Errorf("withheld sample %+v", smp)
	}

	capped := withSamples(t, config.SamplesFull)
	capped.max = 10
	capped.Sample([]*kgo.Record{{Topic: "orders.dirty", Value: []byte(`{"a":"0123456789abcdef"}`)}})
	if v := capped.View().Samples["dirty"][0].Value; !v.Truncated || len(v.Text) > 10 {
		t.Errorf("the size cap is not applied: %+v", v)
	}
}
