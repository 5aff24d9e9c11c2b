package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// marker is what a shell block's {check ...} or {nocheck reason="..."}
// asks for (the list is in doc.go).
type marker struct {
	check    bool
	reason   string // nocheck's reason
	rc       int    // exit=N: each command's expected exit code
	checkout bool   // dir=checkout: run in the repository, GOBIN a temporary folder first on PATH
	kafka    bool   // against the test's embedded Kafka, named by SIDESTREAM_BROKERS
	brokers  string // brokers=LIST: LIST in a command becomes the embedded Kafka's address
	topics   []string
	ready    bool // each command is a server: wait for /readyz, SIGTERM, clean exit
	helm     bool // helm=template: `helm install` is checked as `helm template`
}

var (
	markerInfo = regexp.MustCompile(`\{(check|nocheck)((?:\s[^}]*)?)\}`)
	attrToken  = regexp.MustCompile(`^\s*([a-z]+)(?:=("[^"]*"|[^\s"]+))?`)
)

// parseMarker reads a fence's info string; ok is false when it has no
// marker.
func parseMarker(info string) (m marker, ok bool, err error) {
	g := markerInfo.FindStringSubmatch(info)
	if g == nil {
		return marker{}, false, nil
	}
	m.check = g[1] == "check"
	rest := g[2]
	for strings.TrimSpace(rest) != "" {
		a := attrToken.FindStringSubmatch(rest)
		if a == nil {
			return m, true, fmt.Errorf("cannot read %q in %s", strings.TrimSpace(rest), g[0])
		}
		rest = rest[len(a[0]):]
		key, val := a[1], strings.Trim(a[2], `"`)
		if err := m.set(key, val); err != nil {
			return m, true, fmt.Errorf("%s: %w", g[0], err)
		}
	}
	if !m.check && m.reason == "" {
		return m, true, fmt.Errorf(`%s: nocheck needs reason="..."`, g[0])
	}
	return m, true, nil
}

func (m *marker) set(key, val string) error {
	if !m.check {
		if key != "reason" {
			return fmt.Errorf("nocheck takes reason only, not %s", key)
		}
		m.reason = val
		return nil
	}
	var err error
	switch key {
	case "exit":
		m.rc, err = strconv.Atoi(val)
	case "dir":
		if val != "checkout" {
			err = fmt.Errorf("dir=%s: only dir=checkout", val)
		}
		m.checkout = true
	case "kafka":
		m.kafka = true
	case "brokers":
		m.kafka, m.brokers = true, val
	case "topics":
		m.kafka, m.topics = true, strings.Split(val, ",")
	case "ready":
		m.ready = true
	case "helm":
		if val != "template" {
			err = fmt.Errorf("helm=%s: only helm=template", val)
		}
		m.helm = true
	default:
		err = fmt.Errorf("unknown attribute %q", key)
	}
	if err == nil && val == "" && key != "kafka" && key != "ready" {
		err = fmt.Errorf("%s needs a value", key)
	}
	return err
}

// shellLangs are the fence languages that show commands.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "zsh": true, "shell-session": true}

// uncheckedBlocks are the only shell blocks of the tutorial and the
// recipes allowed to stay unrun: a page, the words its nocheck reason must
// hold, and, when another test runs the block's steps instead, the file
// that must hold that test.
var uncheckedBlocks = []struct {
	page, reason, testFile string
}{
	// Two background servers on fixed ports and files in /tmp: the same
	// steps run in-process in TestRepairLoop, as the page says.
	{"docs/recipes/repair-loop.md", "TestRepairLoop", "internal/sideroute/sideroute_test.go"},
	// Apache Kafka's own tool, not the router's; it needs a JVM and an
	// Apache Kafka distribution, which the unit tier does not have.
	{"docs/recipes/enrich-with-a-lookup-table.md", "kafka-topics.sh", ""},
}

// TestShellBlocksMarked fails when a shell block of the tutorial or a
// recipe has no {check ...} marker, or a {nocheck reason="..."} that
// uncheckedBlocks does not allow, so a command cannot be added to those
// pages without CI running it (or a reviewer reading why not).
func TestShellBlocksMarked(t *testing.T) {
	root := repoRoot(t)
	used := map[int]bool{}
	for _, page := range checkedPages(t, root) {
		for _, l := range readLines(t, filepath.Join(root, page)) {
			m, info := fence(l.text)
			if m == "" || !l.fence || info == "" {
				continue
			}
			if !shellLangs[strings.Fields(info)[0]] {
				continue
			}
			mk, ok, err := parseMarker(info)
			switch {
			case err != nil:
				t.Errorf("%s:%d: %v", page, l.n, err)
			case !ok:
				t.Errorf("%s:%d: a ```%s block without {check} (internal/docscheck/doc.go lists the markers): every command of the tutorial and recipes runs in CI", page, l.n, info)
			case !mk.check:
				i := allowedUnchecked(page, mk.reason)
				if i < 0 {
					t.Errorf("%s:%d: {nocheck reason=%q} is not among uncheckedBlocks (marker_test.go); check the block instead", page, l.n, mk.reason)
					continue
				}
				used[i] = true
			}
		}
	}
	for i, u := range uncheckedBlocks {
		if !used[i] {
			t.Errorf("uncheckedBlocks allows a nocheck on %s (%q) that the page no longer has: remove the entry", u.page, u.reason)
		}
		if u.testFile == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, u.testFile))
		if err != nil {
			t.Errorf("%s: %v", u.page, err)
			continue
		}
		if !strings.Contains(string(b), "func "+u.reason+"(t *testing.T)") {
			t.Errorf("%s: its block is left to %s, which %s no longer holds", u.page, u.reason, u.testFile)
		}
	}
}

func allowedUnchecked(page, reason string) int {
	for i, u := range uncheckedBlocks {
		if u.page == page && strings.Contains(reason, u.reason) {
			return i
		}
	}
	return -1
}

// TestParseMarker tests the marker reader itself.
func TestParseMarker(t *testing.T) {
	for _, c := range []struct {
		info string
		want marker
		ok   bool
		err  string
	}{
		{info: "sh", ok: false},
		{info: "sh {check}", want: marker{check: true}, ok: true},
		{info: "sh {check exit=1}", want: marker{check: true, rc: 1}, ok: true},
		{info: "sh {check brokers=kafka-1:9092,kafka-2:9092 topics=logs ready}", ok: true,
			want: marker{check: true, kafka: true, brokers: "kafka-1:9092,kafka-2:9092", topics: []string{"logs"}, ready: true}},
		{info: "sh {check dir=checkout}", want: marker{check: true, checkout: true}, ok: true},
		{info: "sh {check helm=template}", want: marker{check: true, helm: true}, ok: true},
		{info: `sh {nocheck reason="run by TestX"}`, want: marker{reason: "run by TestX"}, ok: true},
		{info: "sh {nocheck}", ok: true, err: "needs reason"},
		{info: "sh {check exit=one}", ok: true, err: "invalid syntax"},
		{info: "sh {check helm=install}", ok: true, err: "only helm=template"},
		{info: "sh {check brokers}", ok: true, err: "needs a value"},
		{info: "sh {check sleep=5}", ok: true, err: "unknown attribute"},
		{info: `sh {nocheck reason="x" exit=1}`, ok: true, err: "reason only"},
	} {
		got, ok, err := parseMarker(c.info)
		if ok != c.ok || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: ok %v err %v; want ok %v err %q", c.info, ok, err, c.ok, c.err)
			continue
		}
		if err == nil && fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %+v, want %+v", c.info, got, c.want)
		}
	}
}
