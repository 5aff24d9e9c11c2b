package stageone

import (
	"time"

	"github.com/tidwall/gjson"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/wire"
)

// The decode path as it was before the validating member scan, kept as
// the oracle of the differential tests: gjson.ValidBytes over the whole
// value (in validate), then a second pass over the top-level members that
// trusts it, each referenced value parsed by gjson.

// refDecodeInto is decodeInto's reference.
func (d *decoder) refDecodeInto(out *Decoded, topic string, value []byte, ts time.Time) *RecordError {
	if rerr := d.validate(topic, value); rerr != nil {
		return rerr
	}
	var timeRes gjson.Result
	var ferr *RecordError
	refEachMember(value, func(key []byte, escaped bool, raw []byte) {
		if len(key) < 2 {
			return
		}
		name := key[1 : len(key)-1]
		if escaped {
			name = []byte(gjson.ParseBytes(key).Str)
		}
		if i, ok := d.index[string(name)]; ok && ferr == nil {
			fv, err := jsonValue(gjson.ParseBytes(raw))
			if err != nil {
				ferr = recErr(wire.StageDecode, wire.ReasonInvalidJSON, "field %q: %v", name, err)
			}
			out.vals[i] = fv
		}
		if d.timeTop && string(name) == d.timeField {
			timeRes = gjson.ParseBytes(raw)
		}
	})
	if ferr != nil {
		return ferr
	}
	switch {
	case d.timeFmt == config.TimeKafka:
		out.EventTime = ts.UnixMilli()
		return nil
	case !d.timeTop:
		timeRes = getLast(gjson.ParseBytes(value), d.timeField)
	}
	et, rerr := d.eventTime(timeRes)
	if rerr != nil {
		return rerr
	}
	_, rerr = d.bounded(out, et, ts)
	return rerr
}

// refEachMember is the member walk that trusted gjson.ValidBytes.
func refEachMember(v []byte, fn func(key []byte, escaped bool, raw []byte)) {
	i := skipSpace(v, 0) + 1 // past '{'
	for {
		i = skipSpace(v, i)
		if i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
		if i >= len(v) || v[i] != '"' {
			return
		}
		ke, esc := refStringEnd(v, i+1)
		key := v[i:min(ke+1, len(v))]
		i = skipSpace(v, ke+1)
		if i >= len(v) || v[i] != ':' {
			return
		}
		vs := skipSpace(v, i+1)
		i = refValueEnd(v, vs)
		fn(key, esc, v[vs:min(i, len(v))])
	}
}

func refStringEnd(v []byte, i int) (int, bool) {
	esc := false
	for ; i < len(v); i++ {
		switch v[i] {
		case '"':
			return i, esc
		case '\\':
			esc = true
			i++
		}
	}
	return len(v), esc
}

func refValueEnd(v []byte, i int) int {
	if i >= len(v) {
		return i
	}
	switch v[i] {
	case '"':
		e, _ := refStringEnd(v, i+1)
		return e + 1
	case '{', '[':
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '"':
				i, _ = refStringEnd(v, i+1)
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(v) && v[i] != ',' && v[i] != '}' && v[i] != ']' && v[i] != ' ' && v[i] != '\t' && v[i] != '\n' && v[i] != '\r' {
		i++
	}
	return i
}
