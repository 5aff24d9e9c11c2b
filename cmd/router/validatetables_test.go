package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// TestValidateRegistryTable: router validate --registry checks the fields
// an expression reads of a registry-format table's row against the
// latest <topic>-value schema, as it does an input's: a field of the
// schema passes, another fails at its line:col naming the schema's
// fields, a subject the registry lacks is a problem at the table's topic.
func TestValidateRegistryTable(t *testing.T) {
	clearRegistryEnv(t)
	reg := srfake.New()
	defer reg.Close()
	if _, _, err := reg.RegisterSchema("merchants-value", sr.Schema{Schema: `{"type":"record","name":"Merchant","fields":[{"name":"id","type":"string"},{"name":"tier","type":"string"}]}`}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, topic, field, want string }{
		{"good", "merchants", "tier", ""},
		{"misspelt", "merchants", "tierr", `:8:46: routes[0].when: table "merchants" has no field "tierr" (its schema's fields: id, tier)`},
		{"no subject", "shops", "tier", `:14:12: tables[0]: table merchants (avro): subject "shops-value" is not in the schema registry at ` + reg.URL() + ` (404)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := `application_id: a
brokers: [k:9092]
inputs: [{topic: payments}]
routing: {default: rest}
routes:
  - name: vip
    topic: vip
    when: 'lookup("merchants", merchant_id)?.` + c.field + ` == "vip"'
  - {name: rest, topic: rest}
dirty: {topic: payments.dirty}
tables:
  - name: merchants
    format: avro
    topic: ` + c.topic + "\n"
			file := filepath.Join(t.TempDir(), "pm.yaml")
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run(t, "validate", "--registry", reg.URL(), file)
			if c.want == "" {
				if code != 0 || !strings.Contains(out, file+": ok") || strings.Contains(out, "note:") {
					t.Fatalf("exit %d\n%s%s", code, out, errs)
				}
				return
			}
			if code != 1 || !strings.Contains(out, file+c.want) {
				t.Fatalf("exit %d, want 1 and %q\n%s%s", code, file+c.want, out, errs)
			}
		})
	}
}
