package docscheck

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Guarantees, in plain words":                               "guarantees-in-plain-words",
		"Reprocessing from scratch: `router reset`":                "reprocessing-from-scratch-router-reset",
		"`${VAR}` in the topology file":                            "var-in-the-topology-file",
		"Join-assembly by ID: parts, TTL and the incomplete route": "join-assembly-by-id-parts-ttl-and-the-incomplete-route",
		"[DESIGN.md](DESIGN.md) and the_file":                      "designmd-and-the_file",
		"Stage one and stage two":                                  "stage-one-and-stage-two",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBrokenLinksFound proves the checker reports a missing file, a
// missing anchor and a repeated heading's anchor, and ignores fenced code.
func TestBrokenLinksFound(t *testing.T) {
	root := t.TempDir()
	page := "docs/a.md"
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n## Once\n## Twice\n## Twice\n```\n# not a heading\n```\n")
	write(page, "[ok](../README.md#twice-1) [ok](#here) [ok](https://example.com/x#y)\n"+
		"## Here\n[bad file](missing.md) [bad anchor](../README.md#twice-2)\n"+
		"[fenced heading](../README.md#not-a-heading) `[code](nowhere.md)`\n"+
		"```\n[in a fence](nowhere.md)\n```\n[up](../../x.md)\n")
	got, checked := brokenLinks(t, root, page, map[string]map[string]bool{})
	if checked != 7 {
		t.Errorf("checked %d links, want 7 (fenced and code-span links are not links)", checked)
	}
	want := []string{"missing.md", "../README.md#twice-2", "../README.md#not-a-heading", "../../x.md"}
	if len(got) != len(want) {
		t.Fatalf("broken = %v, want targets %v", got, want)
	}
	for i, b := range got {
		if b.target != want[i] {
			t.Errorf("broken[%d] = %v, want target %s", i, b, want[i])
		}
	}
}

// TestSteps proves the snippet check reads files, commands (with a
// continuation), the expected exit code and skips comments and other blocks.
func TestSteps(t *testing.T) {
	page := filepath.Join(t.TempDir(), "p.md")
	text := "# P\n```yaml file=a.yaml\nk: v\n```\n```sh\nnot checked\n```\n" +
		"```sh {check}\n# a comment\nrouter validate \\\n  a.yaml\n\nrouter test a.test.yaml\n```\n" +
		"```sh {check exit=1}\nrouter plan a.yaml b.yaml\n```\n" +
		"```sh {check brokers=k:9092 topics=logs ready}\nrouter run --brokers k:9092\n```\n"
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got := steps(t, page)
	want := []step{
		{line: 2, file: "a.yaml", body: "k: v\n"},
		{line: 10, body: "router validate a.yaml", mark: marker{check: true}, command: true},
		{line: 13, body: "router test a.test.yaml", mark: marker{check: true}, command: true},
		{line: 16, body: "router plan a.yaml b.yaml", mark: marker{check: true, rc: 1}, command: true},
		{line: 19, body: "router run --brokers k:9092", command: true,
			mark: marker{check: true, kafka: true, brokers: "k:9092", topics: []string{"logs"}, ready: true}},
	}
	if len(got) != len(want) {
		t.Fatalf("steps = %+v, want %+v", got, want)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("step %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestRunExitCode proves a failing command is seen as failing.
func TestRunExitCode(t *testing.T) {
	rc, out, err := run(t.TempDir(), os.Environ(), "echo no; exit 3", time.Minute)
	if err != nil || rc != 3 || out != "no\n" {
		t.Fatalf("run = %d %q %v, want 3 \"no\\n\" nil", rc, out, err)
	}
}
