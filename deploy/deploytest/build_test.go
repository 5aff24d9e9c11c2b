package deploytest

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const (
	stampedVersion  = "v0.0.0-deploytest"
	stampedRevision = "0123456789abcdef0123456789abcdef01234567"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

// router builds the binary with scripts/build.sh once per test run (into a
// directory outside the repo, removed by TestMain) and returns its path.
func router(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "sidestream-deploytest-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command(filepath.Join(root, "scripts", "build.sh"), filepath.Join(buildDir, "router"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "VERSION="+stampedVersion, "REVISION="+stampedRevision)
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("scripts/build.sh: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(buildDir, "router")
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestBuildScript(t *testing.T) {
	bin := router(t)

	want := "router " + stampedVersion + " (revision " + stampedRevision + ", go"
	for _, arg := range []string{"version", "--version"} {
		if got := run(t, bin, arg); !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
			t.Errorf("router %s printed %q, want a line starting %q", arg, got, want)
		}
	}
	if got := run(t, bin, "validate", "--config", "examples/logs-by-level.yaml"); !strings.Contains(got, ": ok (") {
		t.Errorf("router validate printed %q", got)
	}

	// Static: no program interpreter (dynamic loader) and no shared
	// libraries, so it runs on a distroless/static image.
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a PT_INTERP program header: it is dynamically linked")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary imports shared libraries %q (err %v)", libs, err)
	}
	// -trimpath: no build machine paths in the binary.
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(root+"/")) {
		t.Errorf("the binary contains the build path %s: built without -trimpath", root)
	}
}

// TestDockerfileUsesBuildScript keeps the image and scripts/build.sh the
// same build: no Docker engine runs here, so the script is what is tested.
func TestDockerfileUsesBuildScript(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{"scripts/build.sh /out/router", "COPY --from=build /out/router /router",
		"distroless/static", "USER 65532:65532", "EXPOSE 8080", `ENTRYPOINT ["/router"]`} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	sh, err := os.ReadFile(filepath.Join(root, "scripts", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version="} {
		if !strings.Contains(string(sh), want) {
			t.Errorf("scripts/build.sh lacks %q", want)
		}
	}
}

// TestChartExampleMatchesRepo keeps the chart's default topology the
// repo's example (minus its loopback brokers line) with the same schema.
func TestChartExampleMatchesRepo(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var want []string
	for _, l := range strings.SplitAfter(read("examples/logs-by-level.yaml"), "\n") {
		if !strings.HasPrefix(l, "brokers:") {
			want = append(want, l)
		}
	}
	if got := read(chartDir + "/files/logs-by-level.yaml"); got != strings.Join(want, "") {
		t.Error("deploy/helm/sidestream/files/logs-by-level.yaml differs from examples/logs-by-level.yaml without its brokers line")
	}
	if read(chartDir+"/files/schemas/log-event.json") != read("examples/schemas/log-event.json") {
		t.Error("deploy/helm/sidestream/files/schemas/log-event.json differs from examples/schemas/log-event.json")
	}
}

// TestRenderedTopologyValidates lays out the ConfigMap as the pod sees it
// (the volume's items: key -> path under /etc/sidestream) and runs
// `router validate` on it, for every value set.
func TestRenderedTopologyValidates(t *testing.T) {
	requireHelm(t)
	bin := router(t)
	for _, s := range valueSets(t) {
		t.Run(s.name, func(t *testing.T) {
			r := render(t, s.args...)
			var cm configMap
			one(t, r.objs, "ConfigMap").decode(t, &cm)
			dir := t.TempDir()
			for _, v := range r.pod.Volumes {
				if v.Name != "config" || v.ConfigMap == nil {
					continue
				}
				for _, it := range v.ConfigMap.Items {
					data, ok := cm.Data[it.Key]
					if !ok {
						t.Fatalf("volume item %q names no ConfigMap key", it.Key)
					}
					p := filepath.Join(dir, filepath.FromSlash(it.Path))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := run(t, bin, "validate", "--config", filepath.Join(dir, "topology.yaml")); !strings.Contains(got, ": ok (") {
				t.Errorf("router validate printed %q", got)
			}
		})
	}
}
