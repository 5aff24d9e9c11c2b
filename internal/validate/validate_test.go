package validate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/cliexit"
)

// TestFilesOffline: an offline validation of a registry-backed topology
// passes with a note (the registry named by the file is never asked: its
// host does not resolve, and no problem says so), and a glob that matches
// nothing is a usage error.
func TestFilesOffline(t *testing.T) {
	for _, v := range []string{"SIDESTREAM_SCHEMA_REGISTRY_URL", "SIDESTREAM_SCHEMA_REGISTRY_USERNAME", "SIDESTREAM_SCHEMA_REGISTRY_PASSWORD"} {
		t.Setenv(v, "")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "orders.yaml")
	src := "application_id: a\nbrokers: [k:9092]\ninputs:\n  - topic: orders\n    format: avro\nschema_registry:\n  url: http://registry.invalid:8081\nrouting:\n  default: main\nroutes:\n  - name: main\n    topic: out\ndirty:\n  topic: orders.dirty\n"
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	res, ok, err := Files([]string{p}, Options{Offline: true})
	if err != nil || !ok || len(res) != 1 || len(res[0].Notes) != 1 || !strings.Contains(res[0].Notes[0], "--offline: the registry is not asked") {
		t.Fatalf("offline: ok %v, err %v, %+v", ok, err, res)
	}
	res, ok, err = Files([]string{p}, Options{})
	if err != nil || !ok || len(res[0].Notes) != 1 || !strings.Contains(res[0].Notes[0], "could not answer") {
		t.Fatalf("online, the registry unreachable: ok %v, err %v, %+v", ok, err, res)
	}
	_, _, err = Files([]string{filepath.Join(dir, "*.yml")}, Options{})
	var ce cliexit.Error
	if !errors.As(err, &ce) || ce.Code != 2 || !strings.Contains(ce.Msg, "no file matches") {
		t.Fatalf("empty glob: %v", err)
	}
}
