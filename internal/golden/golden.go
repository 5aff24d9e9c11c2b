// Package golden compares a test's output with a golden file, or rewrites
// the file under go test's -update flag. Only tests import it.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update is the -update flag of the test binary that imports this package.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata with the current output")

// Check compares got with the golden file at path, or rewrites the file
// with -update. Goldens end in a newline so they diff cleanly.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if len(got) == 0 || got[len(got)-1] != '\n' {
		got = append(got, '\n')
	}
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the package's tests with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run the package's tests with -update if the change is intended)\n--- got\n%s--- want\n%s", path, got, want)
	}
}
