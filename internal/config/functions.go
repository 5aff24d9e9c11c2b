package config

import (
	"fmt"
	"regexp"
	"slices"
	"sort"

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
	// marks: the record's *LookupMarks (_lookups) is passed after the
	// event time; lookup's too-old answers are marked in it.
	marks bool
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

// callArgs are the metadata variables appended to the calls of each
// function that takes any: the event time, then the record's marks.
func (fs Functions) callArgs() map[string][]string {
	var out map[string][]string
	for _, f := range fs {
		var args []string
		if f.eventTime {
			args = append(args, MetaEventTime)
		}
		if f.marks {
			args = append(args, MetaLookups)
		}
		if args != nil {
			if out == nil {
				out = map[string][]string{}
			}
			out[f.Name] = args
		}
	}
	return out
}

// withCallMeta adds to meta (sorted) the metadata variables the calls of
// callees are given (callArgs): the record must provide them.
func (fs Functions) withCallMeta(meta []string, callees map[string]int) []string {
	args := fs.callArgs()
	for name := range callees {
		for _, a := range args[name] {
			if !slices.Contains(meta, a) {
				meta = append(meta, a)
			}
		}
	}
	sort.Strings(meta)
	return meta
}

// options are the functions as expr-lang compile options: each call is
// compiled into the program, so the runtime's record environment needs
// nothing more.
func (fs Functions) options() []expr.Option {
	out := make([]expr.Option, 0, len(fs))
	for _, f := range fs {
		out = append(out, expr.Function(f.Name, f.Fn, f.Types...))
	}
	if args := fs.callArgs(); args != nil {
		out = append(out, expr.Patch(callMetaArgs(args)))
	}
	return out
}

// callMetaArgs appends metadata variables (_event_time, _lookups) to
// every call of its functions, so a function sees the record's event
// time and marks without the expression naming them.
type callMetaArgs map[string][]string

// Visit implements ast.Visitor for expr.Patch.
func (e callMetaArgs) Visit(n *ast.Node) {
	c, ok := (*n).(*ast.CallNode)
	if !ok {
		return
	}
	if id, ok := c.Callee.(*ast.IdentifierNode); ok {
		for _, a := range e[id.Value] {
			c.Arguments = append(c.Arguments, &ast.IdentifierNode{Value: a})
		}
	}
}
