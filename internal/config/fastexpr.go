package config

import (
	"reflect"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// Fast is an expression compiled to Go closures over the record's
// variables by number, for the shapes routes use most: a field compared
// with a literal (==, !=, <, <=, >, >=), a field in a list of literals,
// and not, and, or of those, a field or a default (??), an int modulo
// (%). It evaluates the program's own tree (as
// expr-lang checked and optimized it) with expr-lang's own operators
// (runtime.Equal, runtime.Less ...), so it gives the VM's result. Where
// the VM would fail (mismatched types, a non-bool operand of and/or), it
// does not decide: ok is false and the caller runs the VM, which gives
// the error with its message.
type Fast func(vars []any) (v any, ok bool)

// CompileFast returns the fast form of p, nil when p has a shape Fast
// does not cover. predicate: p was compiled as one (CompileExpr asBool),
// whose value the VM casts to bool, failing on any other. slot numbers
// the variables Fast reads (false: not one it is given, so not covered).
func CompileFast(p *vm.Program, predicate bool, slot func(name string) (int, bool)) Fast {
	return CompileFastTables(p, predicate, slot, nil)
}

// CompileFastTables is CompileFast that also covers a field of a
// lookup() row, lookup("t", key)?.field or lookup("t", key).field
// (fastlookup.go), reading it with field; nil field: it does not.
func CompileFastTables(p *vm.Program, predicate bool, slot func(name string) (int, bool), field TableField) Fast {
	if p == nil {
		return nil
	}
	f := fastNode(p.Node(), slots{index: slot, field: field})
	if f == nil || !predicate {
		return f
	}
	return func(vars []any) (any, bool) {
		v, ok := f(vars)
		if _, isBool := v.(bool); !ok || !isBool {
			return nil, false
		}
		return v, true
	}
}

func fastNode(n ast.Node, slot slots) Fast {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		return fastVar(n.Value, slot)
	case *ast.MemberNode:
		// $env.x and $env["x"]: the variable x.
		id, isID := n.Node.(*ast.IdentifierNode)
		s, isStr := n.Property.(*ast.StringNode)
		if !isID || id.Value != "$env" || !isStr || n.Method {
			return fastLookupField(n, slot)
		}
		return fastVar(s.Value, slot)
	case *ast.ChainNode:
		// lookup(...)?.field: a chain of that one member.
		if m, ok := n.Node.(*ast.MemberNode); ok {
			return fastLookupField(m, slot)
		}
		return nil
	case *ast.UnaryNode:
		return fastNot(n, slot)
	case *ast.BinaryNode:
		return fastBinary(n, slot)
	}
	if v, ok := literal(n); ok {
		return func([]any) (any, bool) { return v, true }
	}
	return nil
}

func fastVar(name string, slot slots) Fast {
	if name == "$env" {
		return nil
	}
	i, ok := slot.index(name)
	if !ok {
		return nil
	}
	return func(vars []any) (any, bool) { return vars[i], true }
}

// literal is the value the VM pushes for a literal node.
func literal(n ast.Node) (any, bool) {
	k := kindOf(n)
	switch n := n.(type) {
	case *ast.NilNode:
		return nil, true
	case *ast.BoolNode:
		return n.Value, true
	case *ast.StringNode:
		return n.Value, true
	case *ast.IntegerNode:
		switch k {
		case reflect.Invalid, reflect.Int:
			return n.Value, true
		case reflect.Float64:
			return float64(n.Value), true
		}
	case *ast.FloatNode:
		if k == reflect.Invalid || k == reflect.Float64 {
			return n.Value, true
		}
	case *ast.ConstantNode:
		switch n.Value.(type) {
		case nil, bool, string, int, float64:
			return n.Value, true
		}
	}
	return nil, false
}

func kindOf(n ast.Node) reflect.Kind {
	if t := n.Type(); t != nil {
		return t.Kind()
	}
	return reflect.Invalid
}

func fastNot(n *ast.UnaryNode, slot slots) Fast {
	if n.Operator != "!" && n.Operator != "not" {
		return nil
	}
	x := fastNode(n.Node, slot)
	if x == nil {
		return nil
	}
	return func(vars []any) (any, bool) {
		v, ok := x(vars)
		b, isBool := v.(bool)
		if !ok || !isBool {
			return nil, false
		}
		return !b, true
	}
}

func fastBinary(n *ast.BinaryNode, slot slots) Fast {
	if n.Operator == "in" {
		return fastIn(n, slot)
	}
	l, r := fastNode(n.Left, slot), fastNode(n.Right, slot)
	if l == nil || r == nil {
		return nil
	}
	switch n.Operator {
	case "==", "!=":
		return fastEqual(n, l, r)
	case "&&", "and":
		return fastLogic(l, r, false)
	case "||", "or":
		return fastLogic(l, r, true)
	case "??":
		return fastCoalesce(l, r)
	case "%":
		return fastModulo(l, r)
	case "<":
		return fastCompare(l, r, runtime.Less)
	case ">":
		return fastCompare(l, r, runtime.More)
	case "<=":
		return fastCompare(l, r, runtime.LessOrEqual)
	case ">=":
		return fastCompare(l, r, runtime.MoreOrEqual)
	}
	return nil
}

// fastEqual is == (or != when n says so). Where the compiler types both
// sides int or string it asserts those types at run time (OpEqualInt,
// OpEqualString), failing on others: Fast then does not decide.
func fastEqual(n *ast.BinaryNode, l, r Fast) Fast {
	neg := n.Operator == "!="
	lk, rk := kindOf(n.Left), kindOf(n.Right)
	typed := reflect.Invalid
	if lk == rk && (lk == reflect.Int || lk == reflect.String) && simple(n.Left) && simple(n.Right) {
		typed = lk
	}
	return func(vars []any) (any, bool) {
		a, ok1 := l(vars)
		b, ok2 := r(vars)
		if !ok1 || !ok2 || (typed != reflect.Invalid && !isKind(a, typed, b)) {
			return nil, false
		}
		return runtime.Equal(a, b) != neg, true
	}
}

// simple is the compiler's isSimpleType: a node whose type is a
// predeclared one.
func simple(n ast.Node) bool {
	t := n.Type()
	return t != nil && t.PkgPath() == ""
}

// isKind reports whether a and b are both of kind k (int or string).
func isKind(a any, k reflect.Kind, b any) bool {
	if k == reflect.Int {
		_, x := a.(int)
		_, y := b.(int)
		return x && y
	}
	_, x := a.(string)
	_, y := b.(string)
	return x && y
}

// fastLogic is and (or when or): the VM short-circuits on a bool left
// operand and fails on any other; Fast decides only on bool operands.
func fastLogic(l, r Fast, or bool) Fast {
	return func(vars []any) (any, bool) {
		a, ok := l(vars)
		x, isBool := a.(bool)
		if !ok || !isBool {
			return nil, false
		}
		if x == or {
			return x, true
		}
		b, ok := r(vars)
		y, isBool := b.(bool)
		if !ok || !isBool {
			return nil, false
		}
		return y, true
	}
}

// fastCoalesce is ??: the left operand unless it is nil (runtime.IsNil,
// as the VM's OpJumpIfNotNil), else the right one, evaluated only then.
func fastCoalesce(l, r Fast) Fast {
	return func(vars []any) (any, bool) {
		a, ok := l(vars)
		if !ok {
			return nil, false
		}
		switch a.(type) {
		case string, int, float64, bool:
			return a, true
		}
		if !runtime.IsNil(a) {
			return a, true
		}
		return r(vars)
	}
}

// fastModulo is %, decided on two ints and a divisor other than zero,
// as runtime.Modulo computes it (int(x) % int(y)); the VM fails on a
// zero divisor or a non-number and converts other numbers: Fast leaves
// those to it.
func fastModulo(l, r Fast) Fast {
	return func(vars []any) (any, bool) {
		a, ok1 := l(vars)
		b, ok2 := r(vars)
		x, isX := a.(int)
		y, isY := b.(int)
		if !ok1 || !ok2 || !isX || !isY || y == 0 {
			return nil, false
		}
		return x % y, true
	}
}

// fastCompare is an ordering, decided when both sides are numbers (int,
// float64) or both strings: the VM fails on other pairs.
func fastCompare(l, r Fast, op func(a, b any) bool) Fast {
	return func(vars []any) (any, bool) {
		a, ok1 := l(vars)
		b, ok2 := r(vars)
		if !ok1 || !ok2 || !ordered(a, b) {
			return nil, false
		}
		return op(a, b), true
	}
}

func ordered(a, b any) bool {
	switch a.(type) {
	case int, float64:
		switch b.(type) {
		case int, float64:
			return true
		}
	case string:
		_, ok := b.(string)
		return ok
	}
	return false
}

// fastIn is x in [literals]. expr-lang's optimizer turns a list of only
// strings (or, for an int x, only ints) into a set, whose lookup fails
// on a needle of another type; a nil needle looks up the zero key.
// Other lists are compared element by element with runtime.Equal.
func fastIn(n *ast.BinaryNode, slot slots) Fast {
	x := fastNode(n.Left, slot)
	if x == nil {
		return nil
	}
	switch set := n.Right.(type) {
	case *ast.ConstantNode:
		switch m := set.Value.(type) {
		case map[string]struct{}:
			return inSet(x, m)
		case map[int]struct{}:
			return inSet(x, m)
		}
	case *ast.ArrayNode:
		return inList(x, set)
	}
	return nil
}

func inSet[K comparable](x Fast, m map[K]struct{}) Fast {
	return func(vars []any) (any, bool) {
		v, ok := x(vars)
		if !ok {
			return nil, false
		}
		var k K
		if v != nil {
			if k, ok = v.(K); !ok {
				return nil, false
			}
		}
		_, in := m[k]
		return in, true
	}
}

func inList(x Fast, list *ast.ArrayNode) Fast {
	vals := make([]any, len(list.Nodes))
	for i, e := range list.Nodes {
		v, ok := literal(e)
		if !ok {
			return nil
		}
		vals[i] = v
	}
	return func(vars []any) (any, bool) {
		v, ok := x(vars)
		if !ok {
			return nil, false
		}
		for _, e := range vals {
			if runtime.Equal(e, v) {
				return true, true
			}
		}
		return false, true
	}
}
