package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/sidestream/sidestream/internal/config"
)

// Fingerprints name a plan, a route's rules and a store's spec by their
// content, so two plans can be compared part by part: a route whose rules
// fingerprint changed routes differently; a store whose spec fingerprint
// changed cannot read the state it wrote.

// fingerprint is the first 16 hex digits of the sha256 of v's JSON
// (encoding/json sorts map keys, so equal content gives equal prints).
func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// The config model is plain data; a value that does not marshal
		// is a bug, named rather than hidden behind a made-up print.
		panic("plan: fingerprint of unmarshalable value: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func windowStatePrint(w *config.Window) string {
	return fingerprint(json.RawMessage(windowStateSpec(w)))
}

func assemblyStatePrint(a *config.Assemble) string {
	return fingerprint(json.RawMessage(assemblyStateSpec(a)))
}

// StateSpecVersion is the version of the state spec descriptions below
// (StateSpec): a stored description of another version is not compared
// field by field, only said to differ.
const StateSpecVersion = 1

// StateSpec is the canonical description of what a window's or an
// assembly's stored state depends on: JSON with sorted, fixed fields, the
// same bytes for the same spec. Stage two stores it in the state's meta,
// so a router that meets state written under another spec can say what
// differs (DiffStateSpec). For windows it holds what the stored layout
// depends on, grace and emit included (they place the windows' timers).
type StateSpec struct {
	V        int             `json:"v"`
	Window   *windowSpecDesc `json:"window,omitempty"`
	Assembly *asmSpecDesc    `json:"assembly,omitempty"`
}

type windowSpecDesc struct {
	Type       string          `json:"type"`
	Size       string          `json:"size,omitempty"`
	Advance    string          `json:"advance,omitempty"`
	Gap        string          `json:"gap,omitempty"`
	Grace      string          `json:"grace"`
	Emit       string          `json:"emit"`
	GroupBy    string          `json:"group_by,omitempty"`
	Aggregates []aggregateDesc `json:"aggregates"`
}

type aggregateDesc struct {
	Name string `json:"name"`
	Fn   string `json:"fn"`
	Of   string `json:"of,omitempty"`
}

type asmSpecDesc struct {
	ID           string   `json:"id,omitempty"`
	Parts        []string `json:"parts"` // name=source
	CompleteWhen []string `json:"complete_when,omitempty"`
	Time         string   `json:"time,omitempty"`
}

func dur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func windowStateSpec(w *config.Window) []byte {
	d := &windowSpecDesc{Type: w.Type, Size: dur(w.Size.D()), Advance: dur(w.Advance.D()), Gap: dur(w.Gap.D()),
		Grace: w.Grace.D().String(), Emit: w.Emit, GroupBy: w.GroupBy}
	for _, a := range w.Aggregates {
		d.Aggregates = append(d.Aggregates, aggregateDesc{Name: a.Name, Fn: a.Fn, Of: a.Of})
	}
	return mustJSON(StateSpec{V: StateSpecVersion, Window: d})
}

func assemblyStateSpec(a *config.Assemble) []byte {
	d := &asmSpecDesc{ID: a.ID, CompleteWhen: a.CompleteWhen, Time: a.Time}
	for _, p := range a.Parts {
		d.Parts = append(d.Parts, p.Name+"="+p.Source)
	}
	return mustJSON(StateSpec{V: StateSpecVersion, Assembly: d})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("plan: state spec does not marshal: " + err.Error()) // plain data: a bug
	}
	return b
}

// DiffStateSpec says what differs from the stored state spec was to the
// spec now wants, field by field ("aggregates: added {...}"). was nil is
// state written by an older version, which stored only a hash of its spec.
func DiffStateSpec(was, now []byte) string {
	if len(was) == 0 {
		return "spec unknown: the state was written by an older version, which stored only a hash of its spec; it differs from " + string(now)
	}
	var o, n map[string]any
	if json.Unmarshal(was, &o) != nil || json.Unmarshal(now, &n) != nil || o["v"] != n["v"] {
		return "stored spec " + string(was) + " differs from " + string(now)
	}
	var parts []string
	for _, kind := range []string{"window", "assembly"} {
		ow, _ := o[kind].(map[string]any)
		nw, _ := n[kind].(map[string]any)
		if (ow == nil) != (nw == nil) {
			return "stored spec " + string(was) + " differs from " + string(now)
		}
		keys := make([]string, 0, len(ow)+len(nw))
		for k := range ow {
			keys = append(keys, k)
		}
		for k := range nw {
			if _, ok := ow[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			ov, nv := ow[k], nw[k]
			if reflect.DeepEqual(ov, nv) {
				continue
			}
			if d := listDetail(reflect.ValueOf(ov), reflect.ValueOf(nv)); d != "" {
				parts = append(parts, kind+"."+k+": "+d)
				continue
			}
			parts = append(parts, fmt.Sprintf("%s.%s: %s -> %s", kind, k, compact(ov), compact(nv)))
		}
	}
	if len(parts) == 0 {
		return "the stored spec and the new one describe the same state"
	}
	return strings.Join(parts, "; ")
}

// stateTopic names a stateful route's internal topic (kind repartition
// or changelog) of its state version: version 0 keeps the names of
// before state_version existed.
func stateTopic(app, route string, version int, kind string) string {
	if version == 0 {
		return app + "-" + route + "-" + kind
	}
	return fmt.Sprintf("%s-%s-v%d-%s", app, route, version, kind)
}

// IsStateTopicOf reports whether topic is an internal topic of the
// stateful route of application app, of any state version (what
// stateTopic makes). A route whose name is another's plus "-v2" makes
// names this also matches: callers exclude the plan's own topics.
func IsStateTopicOf(app, route, topic string) bool {
	rest, ok := strings.CutPrefix(topic, app+"-"+route+"-")
	if !ok {
		return false
	}
	if rest == "repartition" || rest == "changelog" {
		return true
	}
	v, kind, ok := strings.Cut(rest, "-")
	if !ok || (kind != "repartition" && kind != "changelog") || len(v) < 2 || v[0] != 'v' {
		return false
	}
	for _, c := range v[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
