package config

import (
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// getenv is how the topology file's ${VAR} references are resolved
// (os.Getenv; tests replace it).
var getenv = os.Getenv

// varRe matches ${NAME} and ${NAME:default}; $${ is a literal "${".
var varRe = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}|\$\{[^}]*\}?`)

// interpolate replaces ${NAME} and ${NAME:default} in every scalar value
// of the tree (never in keys) by the environment variable, or the default
// when it is unset or empty. A reference to an unset variable without a
// default, or a malformed one, is a problem at its line and column. A
// plain (unquoted) value is typed again after the replacement, so
// partitions: ${PARTITIONS:6} is a number and create: ${CREATE:true} a
// boolean; a quoted one stays a string.
func (d *doc) interpolate(n *yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			d.interpolate(c)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			d.interpolate(n.Content[i])
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		v, ok := d.expand(n)
		if !ok {
			return
		}
		n.Value = v
		if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			n.Tag = ""
			n.Tag = n.ShortTag()
		}
	}
}

// expand returns n's value with its references replaced; false after a
// problem (reported).
func (d *doc) expand(n *yaml.Node) (string, bool) {
	ok := true
	var b strings.Builder
	last := 0
	for _, m := range varRe.FindAllStringSubmatchIndex(n.Value, -1) {
		b.WriteString(n.Value[last:m[0]])
		last = m[1]
		ref := n.Value[m[0]:m[1]]
		switch {
		case ref == "$${":
			b.WriteString("${")
		case m[2] < 0:
			d.errAt(d.valuePos(n, m[0]), "malformed reference %q: write ${NAME} or ${NAME:default} (NAME of letters, digits and _), or $${ for a literal ${", ref)
			ok = false
		default:
			name := n.Value[m[2]:m[3]]
			if v := getenv(name); v != "" {
				b.WriteString(v)
			} else if m[4] >= 0 {
				b.WriteString(n.Value[m[4]:m[5]])
			} else {
				d.errAt(d.valuePos(n, m[0]), "environment variable %s is not set (and ${%s} has no default: write ${%s:default})", name, name, name)
				ok = false
			}
		}
	}
	b.WriteString(n.Value[last:])
	return b.String(), ok
}

// valuePos is the place of byte off of a scalar's value in the file: exact
// for a one-line plain or quoted value without escapes, else the value's
// start.
func (d *doc) valuePos(n *yaml.Node, off int) Pos {
	p := Pos{Line: n.Line, Col: n.Column}
	if strings.ContainsAny(n.Value, "\n") || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return p
	}
	quote := 0
	if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
		quote = 1
	}
	lines := strings.Split(string(d.src), "\n")
	if n.Line < 1 || n.Line > len(lines) {
		return p
	}
	line := lines[n.Line-1]
	start := runeOffset(line, n.Column-1) + quote
	if start+off <= len(line) && strings.HasPrefix(line[start:], n.Value[:off]) {
		return Pos{Line: n.Line, Col: n.Column + quote + len([]rune(n.Value[:off]))}
	}
	return p
}

// runeOffset is the byte offset of the col-th rune (0-based) of s.
func runeOffset(s string, col int) int {
	i := 0
	for off := range s {
		if i == col {
			return off
		}
		i++
	}
	return len(s)
}
