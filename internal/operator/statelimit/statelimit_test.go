package statelimit

import (
	"errors"
	"testing"
)

func TestValidateAndEnabled(t *testing.T) {
	for _, c := range []struct {
		l       Limits
		ok, enf bool
	}{
		{Limits{}, true, false},
		{Limits{MaxEntries: 10}, true, false}, // bounds without a policy are not enforced
		{Limits{MaxEntries: 10, Policy: Route}, true, true},
		{Limits{MaxBytes: 1 << 20, Policy: Evict}, true, true},
		{Limits{Policy: Route}, false, false},
		{Limits{MaxEntries: -1, Policy: Route}, false, false},
		{Limits{MaxBytes: -1}, false, false},
		{Limits{MaxEntries: 1, Policy: Evict + 1}, false, true},
	} {
		err := c.l.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%+v: Validate() = %v, want ok=%v", c.l, err, c.ok)
		}
		if got := c.l.Enabled(); got != c.enf {
			t.Errorf("%+v: Enabled() = %v, want %v", c.l, got, c.enf)
		}
	}
	if Route.String() != "route" || Evict.String() != "evict" || None.String() != "none" || Policy(9).String() != "policy(9)" {
		t.Error("policy names")
	}
}
