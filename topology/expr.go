package topology

import (
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// Record metadata every expression can read besides the JSON fields. The
// leading underscore keeps them apart from ordinary field names; a JSON
// field with one of these names is shadowed by the metadata.
const (
	MetaKey       = "_key"        // string: the input key
	MetaTopic     = "_topic"      // string
	MetaPartition = "_partition"  // int
	MetaOffset    = "_offset"     // int
	MetaTimestamp = "_timestamp"  // int: the Kafka timestamp, epoch ms
	MetaEventTime = "_event_time" // int: the extracted event time, epoch ms
	MetaHeaders   = "_headers"    // map[string]string
)

// metaEnv gives the compiler the types of the metadata variables; JSON
// fields are unknown until run time and are typed as any.
var metaEnv = map[string]any{
	MetaKey:       "",
	MetaTopic:     "",
	MetaPartition: 0,
	MetaOffset:    0,
	MetaTimestamp: 0,
	MetaEventTime: 0,
	MetaHeaders:   map[string]string{},
}

// IsMeta reports whether name is a metadata variable.
func IsMeta(name string) bool { _, ok := metaEnv[name]; return ok }

// Expr is a compiled expression (expr-lang) and the top-level JSON fields
// it reads, so the decoder extracts only those.
type Expr struct {
	Source  string
	Program *vm.Program
	Fields  []string
}

// ExprError is an expression that does not compile.
type ExprError struct {
	Line, Col int // inside the expression, 1-based; 0 when unknown
	Msg       string
}

func (e *ExprError) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s (at column %d of the expression)", e.Msg, e.Col)
	}
	return e.Msg
}

// CompileExpr compiles src; asBool makes it a predicate.
func CompileExpr(src string, asBool bool) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &ExprError{Msg: "empty expression"}
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, exprErr(err)
	}
	opts := []expr.Option{expr.Env(metaEnv), expr.AllowUndefinedVariables(), expr.MaxNodes(10000)}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, exprErr(err)
	}
	c := &fieldCollector{ids: map[string]bool{}, notFields: map[string]bool{}}
	ast.Walk(&tree.Node, c)
	return &Expr{Source: src, Program: prog, Fields: c.result()}, nil
}

func exprErr(err error) error {
	if fe, ok := err.(*file.Error); ok {
		return &ExprError{Line: fe.Line, Col: fe.Column + 1, Msg: fe.Message}
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return &ExprError{Msg: msg}
}

// fieldCollector gathers the identifiers that name record fields: every
// identifier except metadata, called functions and let-bound names.
type fieldCollector struct {
	ids       map[string]bool
	notFields map[string]bool
}

func (c *fieldCollector) Visit(n *ast.Node) {
	switch v := (*n).(type) {
	case *ast.IdentifierNode:
		c.ids[v.Value] = true
	case *ast.CallNode:
		if id, ok := v.Callee.(*ast.IdentifierNode); ok {
			c.notFields[id.Value] = true
		}
	case *ast.VariableDeclaratorNode:
		c.notFields[v.Name] = true
	}
}

func (c *fieldCollector) result() []string {
	var out []string
	for id := range c.ids {
		if !c.notFields[id] && !IsMeta(id) && id != "$env" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
