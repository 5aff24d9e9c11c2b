package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotice keeps NOTICE true: every module the router binary links whose
// module (in the module cache) ships a NOTICE file has its section, as
// section 4(d) of the Apache License asks, and every section names a
// module the binary still links. LICENSE is the Apache License 2.0.
func TestNotice(t *testing.T) {
	lic, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(lic)), "Apache License\n                           Version 2.0, January 2004") {
		t.Error("LICENSE is not the Apache License 2.0")
	}
	b, err := os.ReadFile(filepath.Join(root, "NOTICE"))
	if err != nil {
		t.Fatal(err)
	}
	// A section starts with a rule line and names its module on the next.
	sections := map[string]bool{}
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if strings.HasPrefix(lines[i], "-----") && strings.Contains(lines[i+1], "/") {
			sections[strings.TrimSpace(lines[i+1])] = true
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Dir}}{{end}}{{end}}", "./cmd/router")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	linked := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, ok := strings.Cut(l, "\t")
		if !ok || linked[path] {
			continue
		}
		linked[path] = true
		notices, _ := filepath.Glob(filepath.Join(dir, "NOTICE*"))
		if len(notices) > 0 && !sections[path] {
			t.Errorf("module %s ships %s but NOTICE has no section for it", path, filepath.Base(notices[0]))
		}
	}
	if len(linked) < 20 {
		t.Fatalf("go list found only %d linked modules", len(linked))
	}
	for s := range sections {
		if !linked[s] {
			t.Errorf("NOTICE has a section for %s, which the router no longer links", s)
		}
	}
}
