package observe

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDirtyPairsListed: every stage and reason the code sends a record to
// the dirty route with is in series.go's preset lists, so it exists at 0.
// The code is the runtime's, its operators' and both stages' (../runtime,
// ../operator, ../stagetwo, ../tasks, ../stageone).
func TestDirtyPairsListed(t *testing.T) {
	var files []string
	for _, root := range []string{"../runtime", "../operator", "../stagetwo", "../tasks", "../stageone"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The codes are wire's (wire.StageDecode): the prefix is optional.
	use := regexp.MustCompile(`(?:recErr\(|NewRecordError\(|Stage: |rerr\.Stage, rerr\.Reason = )(?:wire\.)?(Stage\w+),? (?:Reason: )?(?:wire\.)?(Reason\w+)`)
	listedRe := regexp.MustCompile(`\{(?:wire\.)?(Stage\w+), (?:wire\.)?(Reason\w+)\}`)
	b, err := os.ReadFile("series.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range listedRe.FindAllStringSubmatch(string(b), -1) {
		listed[m[1]+"/"+m[2]] = true
	}
	var uses []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range use.FindAllStringSubmatch(string(b), -1) {
			uses = append(uses, f+": "+m[1]+"/"+m[2])
		}
	}
	if len(uses) < 20 || len(listed) < 20 {
		t.Fatalf("found only %d dirty stage/reason uses and %d listed pairs", len(uses), len(listed))
	}
	for _, u := range uses {
		if !listed[u[strings.Index(u, ": ")+2:]] {
			t.Errorf("%s sends records to dirty, a pair internal/observe/series.go does not preset", u)
		}
	}
}
