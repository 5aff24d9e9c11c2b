package config

import (
	"fmt"
	"regexp"
	"strings"
)

// ReferencePath is where the reference page stands in the repository.
const ReferencePath = "docs/reference/config.md"

// ReferencePage renders docs/reference/config.md from Settings: one row
// per setting, in the order of the file's model, then the process's own
// flags and variables. The test TestReferencePage fails when the page in
// the repository differs (go test ./internal/config -run
// TestReferencePage -update rewrites it).
func ReferencePage() []byte {
	var b strings.Builder
	b.WriteString(referenceIntro)
	b.WriteString("\n## The topology file\n\n")
	b.WriteString("| setting | type | default | env | doc |\n|---|---|---|---|---|\n")
	for _, s := range Settings {
		if s.Path == "" {
			continue
		}
		row(&b, code(s.Path), typeCell(s), defaultCell(s), envCell(s), s.Doc+more(s))
	}
	b.WriteString("\n## The process: flags and variables outside the file\n\n")
	b.WriteString("| flag | env | type | default | doc |\n|---|---|---|---|---|\n")
	for _, s := range Settings {
		if s.Path != "" {
			continue
		}
		flag := s.Flag
		if s.Command != "" {
			flag = s.Command + " " + flag
		}
		row(&b, orDash(code(flag)), orDash(code(s.Env)), typeCell(s), defaultCell(s), s.Doc)
	}
	b.WriteString("\n## Notes\n")
	for _, s := range Settings {
		if s.Notes != "" {
			fmt.Fprintf(&b, "\n<a id=%q></a>\n", anchor(s.Path))
			b.WriteString(wrap(code(s.Path)+": "+s.Notes, 76))
		}
	}
	return []byte(b.String())
}

// anchor is the id of a setting's note: "routes[].format" -> "routes-format".
func anchor(path string) string {
	return strings.Trim(nonAnchor.ReplaceAllString(path, "-"), "-")
}

var nonAnchor = regexp.MustCompile(`[^a-z0-9_]+`)

func more(s Setting) string {
	if s.Notes == "" {
		return ""
	}
	return " ([more](#" + anchor(s.Path) + "))"
}

const referenceIntro = `# Configuration reference

<!-- Generated from internal/config/settings.go by
     go test ./internal/config -run TestReferencePage -update
     Do not edit by hand: the test fails when this page and the spec differ. -->

Every setting of the topology file and of the ` + "`router run`" + ` process, one
row each, in the order of the file. Paths name list items with ` + "`[]`" + `
(` + "`routes[].window.size`" + `). Flags win over environment variables, which
win over the file; any value of the file may be ` + "`${VAR}`" + ` or
` + "`${VAR:default}`" + `. A default that depends on other settings is
worded; "required" means the file (or its override) must give it.
` + "`router validate`" + ` checks the file and prints every problem as
` + "`FILE:LINE:COL: message`" + `.
`

func row(b *strings.Builder, cells ...string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" ")
		b.WriteString(strings.ReplaceAll(c, "|", `\|`))
		b.WriteString(" |")
	}
	b.WriteString("\n")
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func typeCell(s Setting) string {
	switch {
	case s.Min != "" && s.Max != "":
		return s.Type + ", " + s.Min + " to " + s.Max
	case s.Min != "":
		return s.Type + " ≥ " + s.Min
	case len(s.Enum) == 0:
		return s.Type
	}
	vals := make([]string, len(s.Enum))
	for i, v := range s.Enum {
		vals[i] = code(v)
	}
	return strings.Join(vals, ", ")
}

func defaultCell(s Setting) string {
	switch {
	case s.Rule != "":
		return s.Rule
	case s.Default != "":
		return code(s.Default)
	case s.Required:
		return "required"
	}
	return "—"
}

func envCell(s Setting) string {
	cells := []string{}
	if s.Env != "" {
		cells = append(cells, code(s.Env))
	}
	if s.Flag != "" {
		cells = append(cells, code(s.Flag))
	}
	return orDash(strings.Join(cells, ", "))
}

// wrap breaks text at spaces into lines of at most width characters
// (a longer word stands alone), each ending in a newline.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && n+1+len(w) > width {
			b.WriteString("\n")
			n = 0
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	b.WriteString("\n")
	return b.String()
}
