package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
)

// TestExprFields checks which names the decoder is told to extract: too
// few and an expression reads nil, too many and every record pays for it.
func TestExprFields(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{`level == "ERROR"`, []string{"level"}},
		{`level == "WARN" && latency_ms > 250`, []string{"latency_ms", "level"}},
		{`service + ":" + string(user_id)`, []string{"service", "user_id"}},
		{`a + a * a`, []string{"a"}},
		// Metadata is not a record field.
		{`_key == "k" && _topic == "t" && _partition == 1 && _offset > 0`, nil},
		{`_timestamp - _event_time > 1000 && _headers["x"] == "y"`, nil},
		{`level == "x" && _key != ""`, []string{"level"}},
		// Called functions are not fields; their arguments are.
		{`lower(level) == "error"`, []string{"level"}},
		{`len(tags) > 0 && upper(trim(name)) != ""`, []string{"name", "tags"}},
		// let-bound names are not fields; what they are bound to is.
		{`let x = a + 1; x > b`, []string{"a", "b"}},
		{`let lvl = lower(level); lvl == "warn" || lvl == "error"`, []string{"level"}},
		// Only the top-level name of a member access is decoded.
		{`user.name == "x" && items[0].price > 1`, []string{"items", "user"}},
		// Closures: # and .field are the element, not record fields.
		{`any(items, .price > limit)`, []string{"items", "limit"}},
		{`sum(xs, # * factor) > 10`, []string{"factor", "xs"}},
		{`{a: b}.a`, []string{"b"}},
		// $env with a constant key is the way to a field whose name is not
		// an identifier or is a built-in function's.
		{`$env["@timestamp"] > 0`, []string{"@timestamp"}},
		{`$env.type == "click" && $env?.date != nil`, []string{"date", "type"}},
		{`$env._key == "k"`, nil},
		{`"constant"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := CompileExpr(tt.src, false)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e.Fields, tt.want) {
				t.Errorf("Fields = %q, want %q", e.Fields, tt.want)
			}
			if e.Source != tt.src {
				t.Errorf("Source = %q", e.Source)
			}
		})
	}
}

func TestCompileExprErrors(t *testing.T) {
	tests := []struct {
		src    string
		asBool bool
		want   string // the whole Error()
	}{
		{"", false, "empty expression"},
		{"  \n\t", true, "empty expression"},
		{`level ==`, true, "the expression ends too early (at column 8 of the expression)"},
		{`amount * * 2`, false, `unexpected operator "*" (at column 10 of the expression)`},
		{`lower(level)`, true, `a predicate must be true or false, but this expression yields a string (compare it, e.g. level == "ERROR")`},
		{`1 + 1`, true, `a predicate must be true or false, but this expression yields a number (compare it, e.g. level == "ERROR")`},
		{`_partition && true`, true, "invalid operation: && (mismatched types int and bool) (at column 12 of the expression)"},
		{`type == "click"`, true, "invalid operation: == (mismatched types func(interface {}) string and string); type is a built-in function: to read the record field, write $env.type (at column 6 of the expression)"},
		{`$env[name] == 1`, true, `$env can only be read with a constant field name, such as $env["@timestamp"] or $env.type: the router decodes only the fields that expressions name`},
		{"a == 1 &&\nb ==", true, "the expression ends too early (at line 2, column 4 of the expression)"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := CompileExpr(tt.src, tt.asBool)
			var ee *ExprError
			if !errors.As(err, &ee) {
				t.Fatalf("CompileExpr(%q) error = %v (%T), want *ExprError", tt.src, err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

// TestCompileExprRuns checks the compiled programs against the env the
// router builds: record fields plus metadata, in one map.
func TestCompileExprRuns(t *testing.T) {
	env := map[string]any{
		"level": "WARN", "latency_ms": 300.0, "service": "api", "user_id": 42, "@timestamp": 1.0, "type": "click",
		MetaKey: "k", MetaPartition: 3, MetaHeaders: map[string]string{"x": "y"},
	}
	tests := []struct {
		src    string
		asBool bool
		want   any
	}{
		{`level == "WARN" && latency_ms > 250`, true, true},
		{`level == "ERROR"`, true, false},
		{`service + ":" + string(user_id)`, false, "api:42"},
		{`$env["@timestamp"] > 0 && $env.type == "click"`, true, true},
		{`_partition == 3 && _headers["x"] == "y" && _key == "k"`, true, true},
		{`missing == nil`, true, true},
	}
	for _, tt := range tests {
		e, err := CompileExpr(tt.src, tt.asBool)
		if err != nil {
			t.Fatal(err)
		}
		got, err := expr.Run(e.Program, env)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if got != tt.want {
			t.Errorf("%s = %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestIsMeta(t *testing.T) {
	for _, m := range []string{MetaKey, MetaTopic, MetaPartition, MetaOffset, MetaTimestamp, MetaEventTime, MetaHeaders} {
		if !IsMeta(m) || !strings.HasPrefix(m, "_") {
			t.Errorf("IsMeta(%q) = false", m)
		}
	}
	for _, f := range []string{"key", "_other", "level", ""} {
		if IsMeta(f) {
			t.Errorf("IsMeta(%q) = true", f)
		}
	}
}
