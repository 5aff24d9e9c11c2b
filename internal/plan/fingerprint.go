package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

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

// windowStateSpec is what a window's stored state depends on: a change to
// any of it makes the state written before unreadable or wrong.
type windowStateSpec struct {
	Type       string
	Size       config.Duration
	Advance    config.Duration
	Gap        config.Duration
	GroupBy    string
	Aggregates []config.Aggregate
}

// assemblyStateSpec is what an assembly's stored state depends on.
type assemblyStateSpec struct {
	ID           string
	Parts        []string // name=source
	CompleteWhen []string
}

func windowStatePrint(w *config.Window) string {
	return fingerprint(windowStateSpec{Type: w.Type, Size: w.Size, Advance: w.Advance, Gap: w.Gap, GroupBy: w.GroupBy, Aggregates: w.Aggregates})
}

func assemblyStatePrint(a *config.Assemble) string {
	s := assemblyStateSpec{ID: a.ID, CompleteWhen: a.CompleteWhen}
	for _, p := range a.Parts {
		s.Parts = append(s.Parts, p.Name+"="+p.Source)
	}
	return fingerprint(s)
}
