package main

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sidestream/sidestream/internal/config"
)

// TestValidateStrict: undefined functions and non-boolean predicates are
// refused at the expression's line:col; several files, a glob and
// --format json.
func TestValidateStrict(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const base = "application_id: a\nbrokers: [k:9092]\ninputs:\n  - topic: in\nrouting:\n  default: main\nroutes:\n  - name: eu\n    topic: out.eu\n    when: %s\n  - name: main\n    topic: out\ndirty:\n  topic: in.dirty\n"
	fn := write("fn.yaml", strings.Replace(base, "%s", "lenn(region) > 0", 1))
	schema, err := filepath.Abs("../../examples/schemas/log-event.json")
	if err != nil {
		t.Fatal(err)
	}
	bare := write("bare.yaml", strings.Replace(strings.Replace(base, "%s", "level", 1), "  - topic: in\n", "  - topic: in\n    schema: "+schema+"\n", 1))
	good := write("good.yaml", strings.Replace(base, "%s", `region == "eu"`, 1))

	code, out, _ := run(t, "validate", fn, bare, good)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		fn + ":10:11: routes[0].when: unknown function lenn (did you mean len?)",
		bare + ":11:11: routes[0].when: a predicate must be true or false, but level is a string field (the input's schema)",
		good + ": ok (1 inputs, 2 routes, guarantee exactly_once)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A quoted glob is expanded by the router; --format json for CI.
	code, out, _ = run(t, "validate", "--format", "json", filepath.Join(dir, "*.yaml"))
	if code != 1 {
		t.Fatalf("json: exit %d\n%s", code, out)
	}
	var res struct {
		OK    bool
		Files []struct {
			File     string
			OK       bool
			Routes   int
			Problems []struct {
				Line, Col int
				Message   string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--format json: %v\n%s", err, out)
	}
	if res.OK || len(res.Files) != 3 {
		t.Fatalf("json result %+v", res)
	}
	for _, f := range res.Files {
		switch f.File {
		case good:
			if !f.OK || f.Routes != 2 {
				t.Errorf("good file: %+v", f)
			}
		case fn:
			if f.OK || len(f.Problems) != 1 || f.Problems[0].Line != 10 || f.Problems[0].Col != 11 || !strings.Contains(f.Problems[0].Message, "unknown function lenn") {
				t.Errorf("fn file: %+v", f)
			}
		case bare:
			if f.OK || len(f.Problems) != 1 {
				t.Errorf("bare file: %+v", f)
			}
		default:
			t.Errorf("unexpected file %q", f.File)
		}
	}
	if code, out, _ := run(t, "validate", "../../examples/*.yaml"); code != 0 || strings.Count(out, ": ok (") < 4 {
		t.Errorf("the examples: exit %d\n%s", code, out)
	}
	if code, _, errs := run(t, "validate", filepath.Join(dir, "*.yml")); code != 2 || !strings.Contains(errs, "no file matches") {
		t.Errorf("empty glob: exit %d %q", code, errs)
	}
	if code, _, errs := run(t, "validate", "--format", "xml", good); code != 2 || !strings.Contains(errs, `--format must be one of "text","json" but got "xml"`) {
		t.Errorf("--format xml: exit %d %q", code, errs)
	}
}

// TestExtraArgumentsRefused: an argument a command does not take is
// refused, and so is a second topology besides --config.
func TestExtraArgumentsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--config", example, "extra"},
		{"demo", example, "--records", "10", "extra"},
		{"topology", "--config", example, "extra"},
		{"redrive", "--config", example, "extra"},
		{"version", "extra"},
		{"topology", example, "extra"},
	} {
		if code, _, errs := run(t, args...); code != 2 || !strings.Contains(errs, `unexpected argument extra`) && !strings.Contains(errs, `FILE "extra" and --config`) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

const ordersAvsc = `{"type":"record","name":"Order","fields":[
 {"name":"id","type":"long"},{"name":"amount","type":"double"},
 {"name":"customer","type":{"type":"record","name":"Customer","fields":[{"name":"name","type":"string"},{"name":"city","type":["null","string"]}]}},
 {"name":"status","type":{"type":"enum","name":"S","symbols":["NEW","PAID"]}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`

const ordersProto = `syntax = "proto3";
message Refund { int64 id = 1; double amount = 2; Who who = 3; int64 ts = 4; }
message Who { string name = 1; }`

// registryTopology is a topology of one registry-backed input; when and
// key are the route's, url the file's schema_registry.url ("" for none).
func registryTopology(t *testing.T, topic, format, when, key, url string) string {
	t.Helper()
	src := "application_id: a\nbrokers: [k:9092]\ninputs:\n  - topic: " + topic + "\n    format: " + format + "\n"
	if url != "" {
		src += "schema_registry:\n  url: " + url + "\n"
	}
	src += "event_time:\n  field: ts\n  format: epoch_ms\nrouting:\n  default: main\nroutes:\n  - name: big\n    topic: out.big\n    when: " + when + "\n    key: " + key + "\n  - name: main\n    topic: out\ndirty:\n  topic: in.dirty\n"
	p := filepath.Join(t.TempDir(), topic+".yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// closedPort is a 127.0.0.1 URL nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

func clearRegistryEnv(t *testing.T) {
	t.Setenv(config.EnvRegistryURL, "")
	t.Setenv(config.EnvRegistryUsername, "")
	t.Setenv(config.EnvRegistryPassword, "")
}

// TestValidateRegistry: router validate --registry against srfake on
// 127.0.0.1 checks the fields the expressions read against each
// registry-backed input's latest <topic>-value schema: a good config
// passes, a misspelt field (nested ones and Protobuf's included) fails
// at its line:col with the nearest name, a subject that does not exist
// is a problem at the input.
func TestValidateRegistry(t *testing.T) {
	clearRegistryEnv(t)
	reg := srfake.New()
	defer reg.Close()
	if _, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersAvsc}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.RegisterSchema("refunds-value", sr.Schema{Schema: ordersProto, Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, topic, format, when, key string
		want                           string // "": ok
	}{
		{"good", "orders", "avro", `amount > 100 && status == "PAID"`, "customer.name", ""},
		{"misspelt", "orders", "avro", `amonut > 100`, "customer.name",
			":14:11: routes[0].when: field amonut cannot be in a record (did you mean amount?): the writer schema of input orders (subject orders-value, version 2) has only amount, customer, id, status, ts"},
		{"nested", "orders", "avro", `amount > 100`, "customer.nmae",
			":15:19: routes[0].key: field customer.nmae cannot be in a record (did you mean customer.name?): customer in the writer schema of input orders (subject orders-value, version 2) has only city, name"},
		{"protobuf good", "refunds", "protobuf", `amount > 1`, "who.name", ""},
		{"protobuf misspelt", "refunds", "protobuf", `amount > 1`, "who.nam",
			":15:14: routes[0].key: field who.nam cannot be in a record (did you mean who.name?)"},
		{"no subject", "payments", "avro", `amount > 1`, "id",
			`:4:12: inputs[0]: input payments (avro): subject "payments-value" is not in the schema registry at ` + reg.URL() + ` (404)`},
		{"another format", "refunds", "avro", `amount > 1`, "id",
			`:4:12: inputs[0]: input refunds (avro): subject "refunds-value" version 1 is a PROTOBUF schema; an input of format avro expects AVRO`},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := registryTopology(t, c.topic, c.format, c.when, c.key, "")
			code, out, errs := run(t, "validate", "--registry", reg.URL(), file)
			if c.want == "" {
				if code != 0 || !strings.Contains(out, file+": ok (1 inputs, 2 routes") || strings.Contains(out, "note:") {
					t.Fatalf("exit %d\n%s%s", code, out, errs)
				}
				return
			}
			if code != 1 || !strings.Contains(out, file+c.want) {
				t.Fatalf("exit %d, want 1 and %q\n%s%s", code, file+c.want, out, errs)
			}
		})
	}

	// The URL from the environment, else the file's, when --registry is
	// not given; --registry wins over both.
	misspelt := registryTopology(t, "orders", "avro", "amonut > 1", "id", closedPort(t))
	if code, out, _ := run(t, "validate", "--registry", reg.URL(), misspelt); code != 1 || !strings.Contains(out, "field amonut cannot be in a record") {
		t.Errorf("--registry over the file's url: exit %d\n%s", code, out)
	}
	t.Setenv(config.EnvRegistryURL, reg.URL())
	if code, out, _ := run(t, "validate", misspelt); code != 1 || !strings.Contains(out, "field amonut cannot be in a record") {
		t.Errorf("%s over the file's url: exit %d\n%s", config.EnvRegistryURL, code, out)
	}
	t.Setenv(config.EnvRegistryURL, "")
	fileURL := registryTopology(t, "orders", "avro", "amonut > 1", "id", reg.URL())
	if code, out, _ := run(t, "validate", fileURL); code != 1 || !strings.Contains(out, "field amonut cannot be in a record") {
		t.Errorf("the file's url: exit %d\n%s", code, out)
	}
	if code, _, errs := run(t, "validate", "--registry", "registry:8081", fileURL); code != 2 || !strings.Contains(errs, `--registry "registry:8081"`) {
		t.Errorf("--registry without a scheme: exit %d %q", code, errs)
	}
}

// TestValidateRegistryCredentials: validate asks the registry with the
// basic auth router run uses (schema_registry.username or its variable,
// the password from SIDESTREAM_SCHEMA_REGISTRY_PASSWORD); without them
// the registry's refusal is a note, not a verdict on the fields.
func TestValidateRegistryCredentials(t *testing.T) {
	clearRegistryEnv(t)
	reg := srfake.New(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("router:s3cret"))))
	defer reg.Close()
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: ordersAvsc})
	file := registryTopology(t, "orders", "avro", "amonut > 1", "id", "")
	code, out, _ := run(t, "validate", "--registry", reg.URL(), file)
	if code != 0 || !strings.Contains(out, file+": note: input orders (avro): fields not checked against a schema: the schema registry at "+reg.URL()+" could not answer") {
		t.Errorf("without credentials: exit %d\n%s", code, out)
	}
	t.Setenv(config.EnvRegistryUsername, "router")
	t.Setenv(config.EnvRegistryPassword, "s3cret")
	if code, out, _ := run(t, "validate", "--registry", reg.URL(), file); code != 1 || !strings.Contains(out, "field amonut cannot be in a record") {
		t.Errorf("with credentials: exit %d\n%s", code, out)
	}
}

// TestValidateRegistryUnchecked: with the registry unreachable validate
// still passes or fails on everything else, exit 0 when nothing else is
// wrong (a note does not fail a file, as router run's warnings do not
// stop it), and says what it could not check, in text and in JSON;
// without any URL the missing URL is the problem router run would have,
// and the note says the fields were not checked.
func TestValidateRegistryUnchecked(t *testing.T) {
	clearRegistryEnv(t)
	down := closedPort(t)
	file := registryTopology(t, "orders", "avro", "amonut > 1", "id", down)
	code, out, _ := run(t, "validate", file)
	want := "input orders (avro): fields not checked against a schema: the schema registry at " + down + " could not answer: "
	if code != 0 || !strings.Contains(out, file+": ok (1 inputs, 2 routes") || !strings.Contains(out, file+": note: "+want) {
		t.Errorf("unreachable: exit %d\n%s", code, out)
	}
	bad := registryTopology(t, "orders", "avro", "lenn(id) > 1", "id", down)
	if code, out, _ := run(t, "validate", bad); code != 1 || !strings.Contains(out, "unknown function lenn") ||
		!strings.Contains(out, bad+": note: input orders (avro): fields not checked against a schema: the file has other problems") {
		t.Errorf("unreachable, another problem: exit %d\n%s", code, out)
	}

	code, out, _ = run(t, "validate", "--format", "json", file)
	var res struct {
		OK    bool
		Files []struct {
			OK       bool
			Notes    []string
			Problems []struct{ Message string }
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--format json: %v\n%s", err, out)
	}
	if code != 0 || !res.OK || len(res.Files) != 1 || len(res.Files[0].Notes) != 1 || !strings.HasPrefix(res.Files[0].Notes[0], want) {
		t.Errorf("json: exit %d %+v", code, res)
	}

	none := registryTopology(t, "orders", "avro", "amount > 1", "id", "")
	code, out, _ = run(t, "validate", none)
	if code != 1 || !strings.Contains(out, `input "orders" has format avro, which needs a schema registry`) ||
		!strings.Contains(out, none+": note: input orders (avro): fields not checked against a schema: no registry given (--registry URL)") {
		t.Errorf("no url: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "validate", "--format", "json", none)
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if code != 1 || res.OK || len(res.Files[0].Notes) != 1 || res.Files[0].Notes[0] != "input orders (avro): fields not checked against a schema: no registry given (--registry URL)" {
		t.Errorf("no url, json: exit %d %+v", code, res)
	}
}

// TestValidateOffline: --offline never asks the registry the file names
// (it would answer, and count the request): the input gets a note, and a
// field the registry would refuse passes unchecked.
func TestValidateOffline(t *testing.T) {
	clearRegistryEnv(t)
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.NotFound(w, nil)
	}))
	defer srv.Close()
	file := registryTopology(t, "orders", "avro", "amonut > 1", "id", srv.URL)
	code, out, errs := run(t, "validate", "--offline", file)
	if code != 0 || !strings.Contains(out, file+": ok (1 inputs, 2 routes") || !strings.Contains(out, "--offline: the registry is not asked") {
		t.Fatalf("validate --offline: exit %d\n%s%s", code, out, errs)
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("validate --offline asked the registry %d times", n)
	}
	// Without --offline it asks (and the subject is missing).
	if code, out, _ := run(t, "validate", file); code != 1 || asked.Load() == 0 {
		t.Fatalf("validate without --offline: exit %d, %d requests\n%s", code, asked.Load(), out)
	}
	if code, _, errs := run(t, "validate", "--offline", "--registry", srv.URL, file); code != 2 || !strings.Contains(errs, "--offline and --registry: choose one") {
		t.Fatalf("--offline --registry: exit %d %q", code, errs)
	}
}
