package pipeline

// eachMember calls fn with each top-level member of the JSON object v, in
// order: its key as written, quotes included (escaped: the key has an
// escape, to be decoded), and its value's raw bytes. v must have passed
// gjson.ValidBytes and be an object: this only finds where members
// start and end, skipping values without decoding them (gjson's ForEach
// parses every value, numbers through ParseFloat, to hand each one
// over). On bytes that are not valid JSON it stops early; it never reads
// past v.
func eachMember(v []byte, fn func(key []byte, escaped bool, raw []byte)) {
	i := skipSpace(v, 0) + 1 // past '{'
	for {
		i = skipSpace(v, i)
		if i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
		if i >= len(v) || v[i] != '"' {
			return // '}' (or not an object)
		}
		ke, esc := stringEnd(v, i+1)
		key := v[i:min(ke+1, len(v))]
		i = skipSpace(v, ke+1)
		if i >= len(v) || v[i] != ':' {
			return
		}
		vs := skipSpace(v, i+1)
		i = valueEnd(v, vs)
		fn(key, esc, v[vs:min(i, len(v))])
	}
}

func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index of the quote closing the string whose content
// starts at i, and whether the string has an escape.
func stringEnd(v []byte, i int) (int, bool) {
	esc := false
	for ; i < len(v); i++ {
		switch v[i] {
		case '"':
			return i, esc
		case '\\':
			esc = true
			i++ // the escaped byte (\" or \\ among them)
		}
	}
	return len(v), esc
}

// valueEnd is the index just past the value starting at i.
func valueEnd(v []byte, i int) int {
	if i >= len(v) {
		return i
	}
	switch v[i] {
	case '"':
		e, _ := stringEnd(v, i+1)
		return e + 1
	case '{', '[':
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '"':
				i, _ = stringEnd(v, i+1)
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
		i++ // a number, true, false or null
	}
	return i
}
