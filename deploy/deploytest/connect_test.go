package deploytest

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// properties reads a Java properties file of deploy/connect (key=value
// lines, # comments; no continuations, which these files do not use).
func properties(t *testing.T, name string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "deploy", "connect", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasSuffix(line, `\`) {
			t.Fatalf("%s:%d: not a one-line key=value", name, n)
		}
		k = strings.TrimSpace(k)
		if _, dup := out[k]; dup {
			t.Fatalf("%s:%d: %s is set twice", name, n, k)
		}
		out[k] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The guarantees docs/handoff.md's table (What each store gets) promises
// rest on these settings; a change to any of them must change the table too.
func TestConnectSinkContract(t *testing.T) {
	common := map[string]string{
		"key.converter":                                 "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                               "org.apache.kafka.connect.json.JsonConverter",
		"consumer.override.isolation.level":             "read_committed",
		"errors.tolerance":                              "all",
		"errors.deadletterqueue.context.headers.enable": "true",
	}
	for file, want := range map[string]map[string]string{
		"mysql-sink.properties": {
			"connector.class":                "io.debezium.connector.jdbc.JdbcSinkConnector",
			"insert.mode":                    "upsert",
			"primary.key.mode":               "record_key",
			"primary.key.fields":             "id",
			"transforms.keyStruct.type":      "org.apache.kafka.connect.transforms.HoistField$Key",
			"transforms.keyStruct.field":     "id",
			"delete.enabled":                 "true",
			"value.converter.schemas.enable": "true",
		},
		"elasticsearch-sink.properties": {
			"key.ignore":                     "false",
			"write.method":                   "insert",
			"behavior.on.null.values":        "delete",
			"schema.ignore":                  "true",
			"value.converter.schemas.enable": "false",
		},
	} {
		p := properties(t, file)
		for k, v := range common {
			want[k] = v
		}
		for k, v := range want {
			if p[k] != v {
				t.Errorf("%s: %s = %q, want %q", file, k, p[k], v)
			}
		}
		if !strings.HasPrefix(p["errors.deadletterqueue.topic.name"], "${env:") {
			t.Errorf("%s: no dead-letter topic", file)
		}
	}
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z0-9_]+)\}`)

// Every ${env:NAME} a shipped config reads is documented in the hand-off
// page (docs/handoff.md), the one mechanism by which deployments (and the
// tests) fill in hosts, ports and topics.
func TestConnectEnvDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "docs", "handoff.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "deploy", "connect", "*.properties"))
	if len(files) < 3 {
		t.Fatalf("deploy/connect has %d properties files, want the worker and two sinks", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range envRef.FindAllStringSubmatch(string(b), -1) {
			if !strings.Contains(string(readme), m[1]) {
				t.Errorf("%s reads ${env:%s}, which docs/handoff.md does not document", filepath.Base(f), m[1])
			}
		}
	}
}
