// Package deploytest checks what ships next to the router: the Helm chart
// (lint, render, golden file, the fields that keep exactly-once safe on
// Kubernetes, the helm test hook run against a live router, the values
// schema and the README's generated values table), the Grafana dashboard
// and alerts (every metric they query exists in
// internal/metrics/metrics.go), and scripts/build.sh (the static binary the
// Dockerfile builds runs).
//
// Helm is built from its Go module by scripts/helm.sh, once, into
// ~/.cache/sidestream. The tests that need it skip only when
// SIDESTREAM_SKIP_HELM=1.
package deploytest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	chartDir    = "deploy/helm/sidestream"
	releaseName = "sidestream"
	namespace   = "sidestream"
)

// root is the repository's root directory.
var root = func() string {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return dir
}()

func helmSkipped() bool { return os.Getenv("SIDESTREAM_SKIP_HELM") == "1" }

func TestMain(m *testing.M) {
	flag.Parse()
	recordInputs()
	if !helmSkipped() {
		// Build Helm once, before the tests, so no test's time includes it.
		cmd := exec.Command(filepath.Join(root, "scripts", "helm.sh"), "--bin")
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "scripts/helm.sh could not build helm: %v (SIDESTREAM_SKIP_HELM=1 skips the Helm tests)\n", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// recordInputs reads every file the tests depend on through helm or the go
// command, so that `go test` caching notices a change to them: the test
// cache only tracks files this process opens itself.
func recordInputs() {
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if name == ".git" || name == "dist" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" || name == "Dockerfile" ||
			strings.HasPrefix(rel, "deploy/") || strings.HasPrefix(rel, "scripts/") || strings.HasPrefix(rel, "examples/") {
			if f, err := os.Open(path); err == nil {
				f.Close()
			}
		}
		return nil
	})
}

func requireHelm(t *testing.T) {
	t.Helper()
	if helmSkipped() {
		t.Skip("SIDESTREAM_SKIP_HELM=1")
	}
}

// helm runs scripts/helm.sh in the repo root.
func helm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "scripts", "helm.sh"), args...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// valueSet is one set of values the chart must lint and render with.
type valueSet struct {
	name string
	args []string // -f FILE / --set
}

// valueSets are the defaults plus every ci/*-values.yaml of the chart (the
// chart-testing convention, so a new file there is linted here too).
func valueSets(t *testing.T) []valueSet {
	t.Helper()
	sets := []valueSet{{name: "default"}}
	files, err := filepath.Glob(filepath.Join(root, chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), "-values.yaml")
		rel, _ := filepath.Rel(root, f)
		sets = append(sets, valueSet{name: name, args: []string{"-f", rel}})
	}
	for _, want := range []string{"deployment", "extras", "keda", "monitoring", "msk", "persistence", "podmonitor", "registry", "tls"} {
		if !slices.ContainsFunc(sets, func(s valueSet) bool { return s.name == want }) {
			t.Fatalf("missing value set ci/%s-values.yaml", want)
		}
	}
	return sets
}

func valueSetArgs(t *testing.T, name string) []string {
	t.Helper()
	for _, s := range valueSets(t) {
		if s.name == name {
			return s.args
		}
	}
	t.Fatalf("no value set %q", name)
	return nil
}

// template renders the chart; it fails the test on a rendering error.
func template(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := helm(t, append([]string{"template", releaseName, chartDir, "--namespace", namespace}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func TestHelmLint(t *testing.T) {
	requireHelm(t)
	sets := append(valueSets(t), valueSet{name: "notes warnings", // the NOTES.txt branches
		args: []string{"--set", "replicaCount=8", "--set", "kafka.existingSecret=kafka-credentials", "--set", "kafka.tls.existingSecret=kafka-tls",
			"--set", "schemaRegistry.existingSecret=registry-credentials", "--set", "schemaRegistry.tls.existingSecret=registry-tls"}},
		valueSet{name: "notes registry over http", args: []string{"--set", "schemaRegistry.url=http://registry:8081", "--set", "schemaRegistry.tls.existingSecret=registry-tls"}},
		valueSet{name: "notes open api exposed", args: []string{"--set", "ingress.enabled=true", "--set", "kafka.saslMechanism=OAUTHBEARER"}})
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", chartDir}, s.args...)
			out, errOut, err := helm(t, args...)
			if err != nil {
				t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
			}
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Fatalf("helm lint did not pass:\n%s", out)
			}
			// Lint logs a template's fail() as information only.
			if strings.Contains(out+errOut, "] Fail:") {
				t.Fatalf("a template failed under helm lint:\n%s%s", out, errOut)
			}
		})
	}
}

// TestHelmTemplate renders every value set and checks each document is a
// Kubernetes object with a kind, a name and this release's labels.
func TestHelmTemplate(t *testing.T) {
	requireHelm(t)
	for _, s := range valueSets(t) {
		t.Run(s.name, func(t *testing.T) {
			objs := parse(t, template(t, s.args...))
			if len(objs) < 5 {
				t.Fatalf("rendered %d objects, want at least 5", len(objs))
			}
			seen := map[string]bool{}
			for _, o := range objs {
				id := o.Kind + "/" + o.Metadata.Name
				if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
					t.Errorf("object without apiVersion, kind or name: %+v", o.header)
				}
				if seen[id] {
					t.Errorf("%s rendered twice", id)
				}
				seen[id] = true
				if o.Metadata.Labels["app.kubernetes.io/instance"] != releaseName {
					t.Errorf("%s: missing the release's labels: %v", id, o.Metadata.Labels)
				}
			}
		})
	}
}

func TestHelmTemplateGolden(t *testing.T) {
	requireHelm(t)
	got := template(t)
	golden := filepath.Join("testdata", "default.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./deploy/deploytest -run Golden -update)", err)
	}
	if got != string(want) {
		t.Errorf("rendered default chart differs from %s (rerun with -update if intended):\n%s", golden, lineDiff(string(want), got))
	}
}

// TestHelmTemplateFails checks that values that cannot work stop rendering
// with a message that says what to change.
func TestHelmTemplateFails(t *testing.T) {
	requireHelm(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"hpa and keda", []string{"-f", "deploy/deploytest/testdata/conflict-hpa-keda-values.yaml"},
			"autoscaling.keda.enabled and autoscaling.hpa.enabled are mutually exclusive"},
		{"keda above partitions", []string{"--set", "autoscaling.keda.enabled=true", "--set", "autoscaling.keda.maxReplicaCount=7"},
			"autoscaling.keda.maxReplicaCount (7) is above inputPartitions (6)"},
		{"hpa above partitions", []string{"--set", "autoscaling.hpa.enabled=true", "--set", "inputPartitions=3", "--set", "autoscaling.hpa.maxReplicas=4"},
			"autoscaling.hpa.maxReplicas (4) is above inputPartitions (3)"},
		{"keda to zero", []string{"--set", "autoscaling.keda.enabled=true", "--set", "autoscaling.keda.minReplicaCount=0"},
			"autoscaling.keda.minReplicaCount must be at least 1"},
		{"grace below transaction + shutdown", []string{"--set", "terminationGracePeriodSeconds=40"},
			"terminationGracePeriodSeconds (40) must exceed"},
		{"long shutdown timeout", []string{"--set", "topology.application_id=a", "--set", "topology.shutdown_timeout=1m"},
			"terminationGracePeriodSeconds (60) must exceed"},
		{"bad duration in topology", []string{"--set", "topology.application_id=a", "--set", "topology.commit_interval=soon"},
			`topology.commit_interval: "soon" is not a Go duration`},
		{"service and pod monitor", []string{"--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.podMonitor.enabled=true"},
			"monitoring.serviceMonitor.enabled and monitoring.podMonitor.enabled are mutually exclusive"},
		{"no brokers", []string{"--set", "kafka.brokers=null"}, "no brokers: set kafka.brokers"},
		{"no application id", []string{"--set", "topology.guarantee=exactly_once"}, "topology.application_id is required"},
		{"unknown workload", []string{"--set", "workload=daemonset"}, "workload"},
		{"unknown value", []string{"--set", "replicas=3"}, "replicas"},
		{"bad transaction timeout", []string{"--set", "router.transactionTimeout=10"}, "transactionTimeout"},
		{"schema file name", []string{"--set", "schemas.a/b=x"}, `schemas: "a/b" is not a plain file name`},
		{"client cert without secret", []string{"--set", "kafka.tls.clientCert=true"}, "kafka.tls.clientCert needs kafka.tls.existingSecret"},
		{"unknown security protocol", []string{"--set", "kafka.securityProtocol=tls"}, "securityProtocol"},
		{"registry client cert without secret", []string{"--set", "schemaRegistry.tls.clientCert=true"},
			"schemaRegistry.tls.clientCert needs schemaRegistry.tls.existingSecret"},
		{"registry url not http", []string{"--set", "schemaRegistry.url=registry:8081"}, "/schemaRegistry/url"},
		{"registry url with credentials", []string{"--set", "schemaRegistry.url=https://u:p@registry:8081"}, "/schemaRegistry/url"},
		{"registry empty secret key", []string{"--set", "schemaRegistry.secretKeys.password="}, "password"},
		{"persistence with a deployment", []string{"--set", "persistence.enabled=true", "--set", "workload=deployment"},
			"persistence.enabled needs workload: statefulset: a Deployment's pods would share one volume"},
		{"persistence under /tmp", []string{"--set", "persistence.enabled=true", "--set", "persistence.mountPath=/tmp/state"},
			`persistence.mountPath "/tmp/state" collides with /tmp`},
		{"persistence on the config", []string{"--set", "persistence.enabled=true", "--set", "persistence.mountPath=/etc/sidestream"},
			`persistence.mountPath "/etc/sidestream" collides with /etc/sidestream`},
		{"persistence above the config", []string{"--set", "persistence.enabled=true", "--set", "persistence.mountPath=/etc"},
			`persistence.mountPath "/etc" collides with /etc/sidestream`},
		{"persistence relative path", []string{"--set", "persistence.enabled=true", "--set", "persistence.mountPath=state"}, "mountPath"},
		{"retention before 1.27", []string{"--kube-version", "1.26.3", "--set", "persistence.enabled=true", "--set", "persistence.retention.whenScaled=Delete"},
			"persistence.retention (whenDeleted Retain, whenScaled Delete) needs Kubernetes 1.27 or later"},
		{"persistence bad retention", []string{"--set", "persistence.retention.whenScaled=Keep"}, "whenScaled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"template", releaseName, chartDir}, c.args...)
			out, errOut, err := helm(t, args...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("helm %s rendered (err %v), want a failure:\n%.2000s", strings.Join(args, " "), err, out)
			}
			if !strings.Contains(errOut, c.want) {
				t.Fatalf("helm %s failed with\n%s\nwant it to mention %q", strings.Join(args, " "), errOut, c.want)
			}
		})
	}
}

// object is one rendered Kubernetes object: its header, plus the node to
// decode the rest from.
type object struct {
	header
	node *yaml.Node
}

type header struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
}

func (o object) decode(t *testing.T, v any) {
	t.Helper()
	if err := o.node.Decode(v); err != nil {
		t.Fatalf("decode %s/%s: %v", o.Kind, o.Metadata.Name, err)
	}
}

// parse splits helm's output into objects.
func parse(t *testing.T, manifest string) []object {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	var objs []object
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("rendered YAML does not parse: %v", err)
		}
		if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			continue // an empty document
		}
		o := object{node: &n}
		if err := n.Decode(&o.header); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	return objs
}

func find(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func one(t *testing.T, objs []object, kind string) object {
	t.Helper()
	got := find(objs, kind)
	if len(got) != 1 {
		t.Fatalf("rendered %d %s objects, want 1", len(got), kind)
	}
	return got[0]
}

func none(t *testing.T, objs []object, kinds ...string) {
	t.Helper()
	for _, k := range kinds {
		if got := find(objs, k); len(got) != 0 {
			t.Errorf("rendered a %s (%s), want none", k, got[0].Metadata.Name)
		}
	}
}

// lineDiff shows the first lines where two texts differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  - %s\n  + %s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
