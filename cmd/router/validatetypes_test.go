package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// TestValidateRegistryTypes: router validate --registry types the fields
// from the writer schema (Avro here) and refuses an expression no record
// can evaluate, at the operator's line:col.
func TestValidateRegistryTypes(t *testing.T) {
	clearRegistryEnv(t)
	reg := srfake.New()
	defer reg.Close()
	if _, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersAvsc}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ when, want string }{
		{`amount > 100 && status == "PAID"`, ""},
		{`amount > "100"`, `:14:18: routes[0].when: invalid operation: > (mismatched types `},
		{`upper(amount) == "X"`, `:14:17: routes[0].when: cannot use number as argument (type string) to call upper`},
	} {
		file := registryTopology(t, "orders", "avro", c.when, "customer.name", "")
		code, out, errs := run(t, "validate", "--registry", reg.URL(), file)
		switch {
		case c.want == "" && code != 0:
			t.Errorf("%s: exit %d\n%s%s", c.when, code, out, errs)
		case c.want != "" && (code != 1 || !strings.Contains(out, file+c.want) || !strings.Contains(out, "(the inputs' schemas: amount is ")):
			t.Errorf("%s: exit %d, want 1 and %q\n%s%s", c.when, code, file+c.want, out, errs)
		}
	}
}
