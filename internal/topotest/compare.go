package topotest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/sideroute"
	"github.com/sidestream/sidestream/internal/wire"
)

type routeExpect struct {
	target   sideroute.Target
	records  []expected
	contains bool
}

// parseExpect reads a case's expect: every route of the topology, with
// the records the case wants on it (none when it names it not). Every
// name the topology does not have is a problem at its line and column.
func parseExpect(tf *File, tc Case, top *plan.Plan) (map[string]*routeExpect, error) {
	out := map[string]*routeExpect{}
	for _, t := range sideroute.Targets(top) {
		out[t.Name] = &routeExpect{target: t}
	}
	fe := &FileError{File: tf.path}
	add := func(name, format string, args ...any) {
		l, c := tf.pos.at(fmt.Sprintf("tests[%d].expect.%s", tc.index, name))
		fe.Problems = append(fe.Problems, Problem{Line: l, Col: c, Message: fmt.Sprintf(format, args...)})
	}
	for _, name := range sortedKeys(tc.Expect) {
		n := tc.Expect[name]
		re, ok := out[name]
		if !ok {
			t, err := sideroute.Resolve(top, name)
			if err != nil {
				add(name, "expect: %v", err)
				continue
			}
			if re = out[t.Name]; re == nil { // a computed topic, by its name
				re = &routeExpect{target: t}
				out[t.Name] = re
			}
		}
		if n.Kind == yaml.MappingNode {
			var c struct {
				Contains []expected `yaml:"contains"`
			}
			if err := n.Decode(&c); err != nil {
				add(name, "expect %s: %v", name, err)
				continue
			}
			re.records, re.contains = c.Contains, true
			continue
		}
		if err := n.Decode(&re.records); err != nil {
			add(name, "expect %s: a list of records or {contains: [...]}: %v", name, err)
		}
	}
	if len(fe.Problems) > 0 {
		return nil, fe
	}
	return out, nil
}

// compareRoutes reads every route's topic back (read_committed) and
// returns the differences, route by route, and what each received.
func compareRoutes(ctx context.Context, brokers []string, exp map[string]*routeExpect, reg *testRegistry) (caseResult, error) {
	byTopic, err := readRoutes(ctx, brokers, exp, reg)
	if err != nil {
		return caseResult{}, err
	}
	var diff, recv strings.Builder
	for _, name := range sortedKeys(exp) {
		re := exp[name]
		gots := byTopic[re.target.Topic]
		if len(gots) > 0 {
			fmt.Fprintf(&recv, "    route %s (%s): %d records\n", name, re.target.Topic, len(gots))
			for _, g := range gots {
				fmt.Fprintf(&recv, "        %s\n", g)
			}
		}
		missing, extra := match(re.records, gots)
		if re.contains {
			extra = nil
		}
		if len(missing) == 0 && len(extra) == 0 {
			continue
		}
		writeDiff(&diff, name, re, gots, missing, extra)
	}
	return caseResult{diff: diff.String(), received: recv.String()}, nil
}

// readRoutes reads every route's topic back (read_committed) in one
// pass, each record as the diff shows it, by topic. A topic the router
// has not created reads as empty.
func readRoutes(ctx context.Context, brokers []string, exp map[string]*routeExpect, reg *testRegistry) (map[string][]got, error) {
	var topics []string
	for _, re := range exp {
		if re.target.Kind == sideroute.KindComputed {
			continue // its topics are expected by name
		}
		if !contains(topics, re.target.Topic) {
			topics = append(topics, re.target.Topic)
		}
	}
	recs, err := readback.ReadCommitted(ctx, brokers, topics...)
	if err != nil && strings.Contains(err.Error(), "UNKNOWN_TOPIC") {
		recs, err = nil, nil
		for _, t := range topics { // one by one: skip the missing ones
			rs, terr := readback.ReadCommitted(ctx, brokers, t)
			if terr != nil && !strings.Contains(terr.Error(), "UNKNOWN_TOPIC") {
				return nil, fmt.Errorf("read %s: %w", t, terr)
			}
			recs = append(recs, rs...)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read the routes back: %w", err)
	}
	out := map[string][]got{}
	for _, r := range recs {
		why := wire.Decode(r.Headers)
		g := got{Value: reg.view(ctx, r.Value), Reason: why.Code(), Error: why.Error}
		if r.Key != nil {
			k := string(r.Key)
			g.Key = &k
		}
		out[r.Topic] = append(out[r.Topic], g)
	}
	return out, nil
}

// writeDiff writes one route's diff: each wanted record not received
// (-), each received record not wanted (+), and, for contains:, every
// record the route received.
func writeDiff(b *strings.Builder, name string, re *routeExpect, gots []got, missing []expected, extra []got) {
	fmt.Fprintf(b, "    route %s (%s): %d records", name, re.target.Topic, len(gots))
	if re.contains {
		fmt.Fprintf(b, "; contains: %d of %d wanted records not received", len(missing), len(re.records))
	}
	b.WriteString("\n")
	for _, m := range missing {
		fmt.Fprintf(b, "      - want %s\n", describeExpected(m))
		if g, why, ok := closest(m, gots); ok {
			fmt.Fprintf(b, "        closest: %s\n", g)
			for _, w := range why {
				fmt.Fprintf(b, "          %s\n", w)
			}
		}
	}
	for _, g := range extra {
		fmt.Fprintf(b, "      + got  %s\n", g)
	}
	if re.contains {
		for _, g := range gots {
			fmt.Fprintf(b, "        got  %s\n", g)
		}
	}
}

// match pairs each expected record with one record read (any order): the
// expected ones left over are missing, the records left over are extra.
func match(want []expected, have []got) (missing []expected, extra []got) {
	used := make([]bool, len(have))
	for _, w := range want {
		found := false
		for i, g := range have {
			if !used[i] && matches(w, g) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			missing = append(missing, w)
		}
	}
	for i, g := range have {
		if !used[i] {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

func matches(w expected, g got) bool { return len(mismatches(w, g)) == 0 }

// mismatches says why g is not w: each matcher of w that g fails, with
// what was wanted and what came (for values, field by field).
func mismatches(w expected, g got) []string {
	var out []string
	if w.Key != nil && (g.Key == nil || *w.Key != *g.Key) {
		out = append(out, fmt.Sprintf("key: want %q, got %s", *w.Key, keyText(g.Key)))
	}
	if w.Reason != "" && w.Reason != g.Reason {
		out = append(out, fmt.Sprintf("reason: want %s, got %q", w.Reason, g.Reason))
	}
	if w.Error != "" && !strings.Contains(g.Error, w.Error) {
		out = append(out, fmt.Sprintf("error: want text %q, got %q", w.Error, g.Error))
	}
	var gv any
	gotJSON := json.Unmarshal(g.Value, &gv) == nil
	if w.ValueHas != nil {
		if !gotJSON {
			out = append(out, "value_has: the value is not JSON")
		} else {
			out = append(out, jsonDiff("value", gv, normalize(w.ValueHas), true)...)
		}
	}
	switch {
	case w.Value.Kind == 0:
	case w.Value.Kind == yaml.ScalarNode && w.Value.ShortTag() == "!!null":
		if g.Value != nil {
			out = append(out, "value: want null (a tombstone), got a value")
		}
	case w.Value.Kind == yaml.ScalarNode && w.Value.ShortTag() == "!!str":
		if string(g.Value) != w.Value.Value {
			out = append(out, fmt.Sprintf("value: want the bytes %q", w.Value.Value))
		}
	default:
		var wv any
		switch {
		case w.Value.Decode(&wv) != nil:
			out = append(out, "value: the wanted value is not JSON")
		case !gotJSON:
			out = append(out, "value: the value is not JSON")
		default:
			out = append(out, jsonDiff("value", gv, normalize(wv), false)...)
		}
	}
	return out
}

func keyText(k *string) string {
	if k == nil {
		return "no key"
	}
	return strconv.Quote(*k)
}

// jsonDiff lists where have differs from want, by path: a field
// missing, a value not equal, and (unless contain: value_has) a field
// not wanted.
func jsonDiff(path string, have, want any, contain bool) []string {
	wm, wok := want.(map[string]any)
	hm, hok := have.(map[string]any)
	if !wok || !hok {
		hb, _ := json.Marshal(have)
		wb, _ := json.Marshal(want)
		if bytes.Equal(hb, wb) {
			return nil
		}
		return []string{fmt.Sprintf("%s: want %s, got %s", path, wb, hb)}
	}
	var out []string
	for _, k := range sortedKeys(wm) {
		hv, ok := hm[k]
		if !ok {
			out = append(out, fmt.Sprintf("%s.%s: missing", path, k))
			continue
		}
		out = append(out, jsonDiff(path+"."+k, hv, wm[k], contain)...)
	}
	if !contain {
		for _, k := range sortedKeys(hm) {
			if _, ok := wm[k]; !ok {
				hb, _ := json.Marshal(hm[k])
				out = append(out, fmt.Sprintf("%s.%s: not wanted, got %s", path, k, hb))
			}
		}
	}
	return out
}

// closest is the received record that fails the fewest of w's
// matchers, and how it fails them; ok is false without any.
func closest(w expected, gots []got) (got, []string, bool) {
	best, bestWhy := -1, []string(nil)
	for i, g := range gots {
		why := mismatches(w, g)
		if best < 0 || len(why) < len(bestWhy) {
			best, bestWhy = i, why
		}
	}
	if best < 0 {
		return got{}, nil, false
	}
	return gots[best], bestWhy, true
}

// normalize turns YAML's decoded maps into the JSON shapes json.Unmarshal
// makes, so the two compare as JSON.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

func describeExpected(e expected) string {
	var b strings.Builder
	if e.Key != nil {
		fmt.Fprintf(&b, "key=%q ", *e.Key)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, "reason=%s ", e.Reason)
	}
	if e.Error != "" {
		fmt.Fprintf(&b, "error~%q ", e.Error)
	}
	if e.Value.Kind != 0 {
		if v, err := nodeBytes(&e.Value); err == nil {
			fmt.Fprintf(&b, "value=%s ", v)
		}
	}
	if e.ValueHas != nil {
		v, _ := json.Marshal(normalize(e.ValueHas))
		fmt.Fprintf(&b, "value_has=%s", v)
	}
	return strings.TrimSpace(b.String())
}
