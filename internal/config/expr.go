package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
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
	// MetaLookups is the record's *LookupMarks, passed to every lookup()
	// call after the event time (as _event_time is): where a call that
	// was answered too old names its table. Not for expressions to read.
	MetaLookups = "_lookups"
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
	MetaLookups:   (*LookupMarks)(nil),
}

// IsMeta reports whether name is a metadata variable.
func IsMeta(name string) bool { _, ok := metaEnv[name]; return ok }

// Expr is a compiled expression (expr-lang) and the top-level JSON fields
// it reads, so the decoder extracts only those.
type Expr struct {
	Source  string
	Program *vm.Program
	Fields  []string
	// Meta is the metadata variables it reads (MetaKey ...), sorted, so
	// the runtime sets only those.
	Meta []string
}

// ExprError is an expression that does not compile.
type ExprError struct {
	Line, Col int // inside the expression, 1-based; 0 when unknown
	Msg       string
}

func (e *ExprError) Error() string {
	switch {
	case e.Line > 1 && e.Col > 0:
		return fmt.Sprintf("%s (at line %d, column %d of the expression)", e.Msg, e.Line, e.Col)
	case e.Col > 0:
		return fmt.Sprintf("%s (at column %d of the expression)", e.Msg, e.Col)
	}
	return e.Msg
}

// CompileExpr compiles src; asBool makes it a predicate.
func CompileExpr(src string, asBool bool) (*Expr, error) {
	return compileExpr(src, asBool, nil, nil)
}

// CompileExprWith is CompileExpr with the embedding program's functions
// (Config.Functions).
func CompileExprWith(src string, asBool bool, fns Functions) (*Expr, error) {
	return compileExpr(src, asBool, nil, fns)
}

// compileExpr compiles src with the field types of the inputs' schemas
// (ft may be nil: every field is of unknown type) and runs the strict
// checks (exprcheck.go).
func compileExpr(src string, asBool bool, ft *fieldTypes, fns Functions) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &ExprError{Msg: "empty expression"}
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, exprErr(err)
	}
	opts := append([]expr.Option{expr.Env(metaEnv), expr.AllowUndefinedVariables(), expr.MaxNodes(10000)}, fns.options()...)
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	c := newFieldCollector()
	ast.Walk(&tree.Node, c)
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		ee := exprErr(err)
		if m := notBoolRe.FindStringSubmatch(ee.Msg); asBool && m != nil {
			ee.Msg = fmt.Sprintf("a predicate must be true or false, but this expression yields %s (compare it, e.g. level == \"ERROR\")", typeName(m[1]))
		}
		if b := c.builtinsAsFields(); len(b) > 0 {
			ee.Msg = strings.TrimSpace(ee.Msg) + fmt.Sprintf("; %s is a built-in function: to read the record field, write $env.%s", b[0], b[0])
		}
		return nil, ee
	}
	if c.envDynamic > 0 {
		return nil, &ExprError{Msg: `$env can only be read with a constant field name, such as $env["@timestamp"] or $env.type: the router decodes only the fields that expressions name`}
	}
	fields, meta := c.result()
	meta = fns.withCallMeta(meta, c.callees)
	if ee := lookupCheck(src, &tree.Node, fns); ee != nil {
		return nil, ee
	}
	if ee := typeCheck(src, asBool, bareField(tree.Node) != nil, ft, fns, fields); ee != nil {
		return nil, ee
	}
	if ee := strictCheck(src, &tree.Node, asBool, ft, fns); ee != nil {
		return nil, ee
	}
	return &Expr{Source: src, Program: prog, Fields: fields, Meta: meta}, nil
}

var notBoolRe = regexp.MustCompile(`^expected bool, but got (.+)$`)

// typeName says a Go type the way a config author thinks of it.
func typeName(t string) string {
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "map"):
		return "a map"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case t == "<nil>" || t == "nil":
		return "nil"
	}
	return t
}

// exprErr keeps the first line of the compiler's message: a config
// problem is printed as one FILE:LINE:COL line.
func exprErr(err error) *ExprError {
	if fe, ok := err.(*file.Error); ok {
		return &ExprError{Line: fe.Line, Col: fe.Column + 1, Msg: exprMsg(firstLine(fe.Message))}
	}
	return &ExprError{Msg: exprMsg(firstLine(err.Error()))}
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// exprMsg rewords the parser's messages that name its tokens rather than
// what the user wrote.
func exprMsg(m string) string {
	if m == "unexpected token EOF" {
		return "the expression ends too early"
	}
	if t := tokenRe.FindStringSubmatch(m); t != nil {
		kind, ok := tokenKinds[t[2]]
		if !ok {
			kind = strings.ToLower(t[2])
		}
		return fmt.Sprintf("%s%s %s", t[1], kind, t[3])
	}
	return m
}

// tokenRe matches the parser's token names, as in
// `unexpected token Operator("*")`.
var tokenRe = regexp.MustCompile(`^(.*)\btoken (\w+)\((".*")\)`)

var tokenKinds = map[string]string{
	"Identifier": "name",
	"Operator":   "operator",
	"Bracket":    "bracket",
	"Number":     "number",
	"String":     "string",
}

// fieldCollector gathers the names of the record fields an expression
// reads, so the decoder extracts only those: every identifier except
// metadata, called functions and let-bound names, plus the constant keys
// of $env (the only way to read a field whose name is not an identifier,
// or is a built-in function's, like "type" or "date").
type fieldCollector struct {
	ids       map[string]int // identifier -> occurrences
	callees   map[string]int // identifier -> occurrences as a callee
	notFields map[string]bool
	env       map[string]bool // constant $env keys
	// envDynamic counts $env uses whose key is not a constant: the fields
	// they read are unknown before run time.
	envDynamic int
}

func newFieldCollector() *fieldCollector {
	return &fieldCollector{ids: map[string]int{}, callees: map[string]int{}, notFields: map[string]bool{}, env: map[string]bool{}}
}

// Visit is called children first (ast.Walk is post-order), so a $env
// identifier is counted as dynamic before its MemberNode, if it has one
// with a constant key, takes it back.
func (c *fieldCollector) Visit(n *ast.Node) {
	switch v := (*n).(type) {
	case *ast.IdentifierNode:
		if v.Value == "$env" {
			c.envDynamic++
			return
		}
		c.ids[v.Value]++
	case *ast.MemberNode:
		if id, ok := v.Node.(*ast.IdentifierNode); ok && id.Value == "$env" {
			if s, ok := v.Property.(*ast.StringNode); ok {
				c.env[s.Value] = true
				c.envDynamic--
			}
		}
	case *ast.CallNode:
		if id, ok := v.Callee.(*ast.IdentifierNode); ok {
			c.notFields[id.Value] = true
			c.callees[id.Value]++
		}
	case *ast.VariableDeclaratorNode:
		c.notFields[v.Name] = true
	}
}

// result is the record fields and the metadata variables the expression
// reads, each sorted.
func (c *fieldCollector) result() (fields, meta []string) {
	set := map[string]bool{}
	for id := range c.ids {
		if !c.notFields[id] {
			set[id] = true
		}
	}
	for k := range c.env {
		set[k] = true
	}
	for f := range set {
		if IsMeta(f) {
			meta = append(meta, f)
		} else {
			fields = append(fields, f)
		}
	}
	sort.Strings(fields)
	sort.Strings(meta)
	return fields, meta
}

// builtinsAsFields lists, sorted, the built-in function names the
// expression uses as values, not calls: most likely a record field with
// that name (type, date, count ...), which only $env.name can read.
func (c *fieldCollector) builtinsAsFields() []string {
	var out []string
	for id, n := range c.ids {
		if _, ok := builtin.Index[id]; ok && n > c.callees[id] {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
