package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// Doc is one key's value as the audit compares it: every non-null field,
// its value in a canonical form that does not depend on the store's types.
// A number is an exact rational ("n:3/2"), a boolean the number 1 or 0 (MySQL
// stores BOOLEAN as TINYINT), a string "s:" and its text, an object or
// array "j:" and its JSON with sorted keys. A null field and an absent one
// are the same: a sink may add a column another record needs.
type Doc map[string]string

// docFromJSON reads a JSON object; a Kafka Connect JsonConverter envelope
// ({"schema": ..., "payload": {...}}, a connect-json route) is its payload.
func docFromJSON(b []byte) (Doc, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object: null")
	}
	if p, ok := m["payload"]; ok && len(m) == 2 {
		if _, ok := m["schema"]; ok {
			pm, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("connect-json payload is not an object")
			}
			m = pm
		}
	}
	return docFromMap(m), nil
}

func docFromMap(m map[string]any) Doc {
	d := make(Doc, len(m))
	for k, v := range m {
		if s, ok := canonical(v); ok {
			d[k] = s
		}
	}
	return d
}

// canonical is v's canonical form; false for null.
func canonical(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case bool:
		if x {
			return "n:1", true
		}
		return "n:0", true
	case json.Number:
		return canonicalNumber(string(x))
	case float64:
		return canonicalNumber(fmt.Sprint(x))
	case string:
		return "s:" + x, true
	default:
		b, err := json.Marshal(x) // maps with sorted keys
		if err != nil {
			return "j:" + fmt.Sprint(x), true
		}
		return "j:" + string(b), true
	}
}

// canonicalNumber is an exact decimal's form ("1.50" and "1.5" are one
// number); a text that is no number stays a string.
func canonicalNumber(s string) (string, bool) {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	if !ok {
		return "s:" + s, true
	}
	return "n:" + r.RatString(), true
}

// diffFields names the fields whose values differ, sorted.
func diffFields(a, b Doc) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
