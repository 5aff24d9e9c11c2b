package config

import (
	"fmt"
	"regexp"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
)

// Function is a Go function that expressions may call, registered by a
// program that embeds the router (the public package's WithFunction).
// Validation knows it as it knows a built-in: a call of it is no unknown
// function, and its Types (expr-lang signatures, such as
// new(func(string) string)) check the arguments at load time. Without
// Types any arguments are accepted and Fn checks them at run time: an
// error it returns sends the record to dirty (expression_error).
type Function struct {
	Name  string
	Fn    func(params ...any) (any, error)
	Types []any

	// eventTime: the record's event time (_event_time, epoch ms) is
	// passed as one more, last argument; lookup's as_of reads it. Only
	// the router's own functions set it (TableFunction).
	eventTime bool
	// tables are lookup's tables and their closed fields, for the
	// checks of its calls (lookupCheck).
	tables map[string]tableFields
}

// Functions are the functions a topology's expressions may call besides
// the built-ins.
type Functions []Function

var functionName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Check refuses a function that could not be called or would hide
// another name: an invalid identifier, a built-in's name, a metadata
// variable's, a name given twice, a nil Fn.
func (fs Functions) Check() error {
	seen := map[string]bool{}
	for _, f := range fs {
		switch {
		case !functionName.MatchString(f.Name):
			return fmt.Errorf("function %q: a name is letters, digits and _, not starting with a digit", f.Name)
		case IsMeta(f.Name):
			return fmt.Errorf("function %q: the name of a metadata variable", f.Name)
		case f.Fn == nil:
			return fmt.Errorf("function %q: no Go function given", f.Name)
		case seen[f.Name]:
			return fmt.Errorf("function %q: registered twice", f.Name)
		}
		if _, ok := builtin.Index[f.Name]; ok {
			return fmt.Errorf("function %q: a built-in function of the expression language has that name", f.Name)
		}
		seen[f.Name] = true
	}
	return nil
}

// has says whether name is one of the functions.
func (fs Functions) has(name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

// eventTimeNames are the functions that take the event time as their
// last argument.
func (fs Functions) eventTimeNames() map[string]bool {
	var out map[string]bool
	for _, f := range fs {
		if f.eventTime {
			if out == nil {
				out = map[string]bool{}
			}
			out[f.Name] = true
		}
	}
	return out
}

// options are the functions as expr-lang compile options: each call is
// compiled into the program, so the runtime's record environment needs
// nothing more.
func (fs Functions) options() []expr.Option {
	out := make([]expr.Option, 0, len(fs))
	for _, f := range fs {
		out = append(out, expr.Function(f.Name, f.Fn, f.Types...))
	}
	if names := fs.eventTimeNames(); names != nil {
		out = append(out, expr.Patch(eventTimeArg(names)))
	}
	return out
}

// eventTimeArg appends the _event_time variable to every call of its
// functions, so a function sees the record's event time without the
// expression naming it.
type eventTimeArg map[string]bool

// Visit implements ast.Visitor for expr.Patch.
func (e eventTimeArg) Visit(n *ast.Node) {
	c, ok := (*n).(*ast.CallNode)
	if !ok {
		return
	}
	if id, ok := c.Callee.(*ast.IdentifierNode); ok && e[id.Value] {
		c.Arguments = append(c.Arguments, &ast.IdentifierNode{Value: MetaEventTime})
	}
}
