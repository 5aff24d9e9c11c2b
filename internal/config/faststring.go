package config

import (
	"strconv"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// FastString is the fast form of an expression that yields a string, a
// computed topic's: it appends the string to buf instead of building
// one, so that the caller can look the name up (a map index with
// string(buf) does not allocate) and allocate it only when it is new.
// It covers string literals and fields, + of two strings, string() of
// a string, an int or a bool, lower() and upper() of an ASCII string,
// over the operands Fast covers. As Fast, it does not decide where the
// VM could fail or where it would need more than these (an operand of
// another type, a float, a non-ASCII lower): ok is false and the caller
// runs the VM, which gives the value or the error.
type FastString func(buf []byte, vars []any) (out []byte, ok bool)

// CompileFastString returns the fast form of p, nil when p has a shape
// FastString does not cover; slot numbers the variables (CompileFast).
func CompileFastString(p *vm.Program, slot func(name string) (int, bool)) FastString {
	if p == nil {
		return nil
	}
	return fastStr(p.Node(), slots{index: slot})
}

func fastStr(n ast.Node, slot slots) FastString {
	switch n := n.(type) {
	case *ast.BinaryNode:
		if n.Operator == "+" {
			return fastConcat(n, slot)
		}
	case *ast.BuiltinNode:
		return fastStrBuiltin(n, slot)
	}
	x := fastNode(n, slot)
	if x == nil {
		return nil
	}
	return func(buf []byte, vars []any) ([]byte, bool) {
		v, ok := x(vars)
		s, isStr := v.(string)
		if !ok || !isStr {
			return buf, false
		}
		return append(buf, s...), true
	}
}

// fastConcat is + of two strings (runtime.Add's x + y); on any other
// operand the VM adds numbers or fails, so FastString does not decide.
func fastConcat(n *ast.BinaryNode, slot slots) FastString {
	l, r := fastStr(n.Left, slot), fastStr(n.Right, slot)
	if l == nil || r == nil {
		return nil
	}
	return func(buf []byte, vars []any) ([]byte, bool) {
		buf, ok := l(buf, vars)
		if !ok {
			return buf, false
		}
		return r(buf, vars)
	}
}

// fastStrBuiltin is string(x) (the builtin's fmt.Sprintf("%v", x), for
// a string, an int or a bool), lower(s) and upper(s) (strings.ToLower
// and ToUpper, for an ASCII s, where they map byte by byte).
func fastStrBuiltin(n *ast.BuiltinNode, slot slots) FastString {
	if len(n.Arguments) != 1 {
		return nil
	}
	switch n.Name {
	case "string":
		x := fastNode(n.Arguments[0], slot)
		if x == nil {
			return nil
		}
		return func(buf []byte, vars []any) ([]byte, bool) {
			v, ok := x(vars)
			if !ok {
				return buf, false
			}
			return appendValue(buf, v)
		}
	case "lower", "upper":
		x := fastStr(n.Arguments[0], slot)
		if x == nil {
			return nil
		}
		from, to := byte('A'), byte('a')
		if n.Name == "upper" {
			from, to = 'a', 'A'
		}
		return func(buf []byte, vars []any) ([]byte, bool) {
			start := len(buf)
			buf, ok := x(buf, vars)
			if !ok {
				return buf, false
			}
			for i := start; i < len(buf); i++ {
				switch c := buf[i]; {
				case c >= utf8.RuneSelf:
					return buf, false
				case c >= from && c <= from+'z'-'a':
					buf[i] = c - from + to
				}
			}
			return buf, true
		}
	}
	return nil
}

// appendValue appends v as fmt's %v writes it, for a string, an int or
// a bool; false for any other type.
func appendValue(buf []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case string:
		return append(buf, v...), true
	case int:
		return strconv.AppendInt(buf, int64(v), 10), true
	case bool:
		return strconv.AppendBool(buf, v), true
	}
	return buf, false
}
