package config

import "github.com/expr-lang/expr/ast"

// slots are what a fast form reads: the record's variables by number
// (index, false: not one it is given), and a field of a table's row
// (nil: lookup() is left to the VM).
type slots struct {
	index func(name string) (int, bool)
	field TableField
}

// TableField reads one top-level field of a table's row, for the fast
// form of lookup("t", key)?.field: v is what the row lookup() answers
// holds under field (nil when it has none), found false when the key has
// no row. ok false: it does not decide (an as_of table, whose answers
// depend on the record's event time and mark its outputs; tables not
// loaded; an error), and the VM runs lookup() itself. It counts its
// answers as lookup() does.
type TableField func(table string, key any, field string) (v any, found, ok bool)

// fastLookupField is the fast form of m when it is a field of a lookup()
// row: lookup("t", key).field, optional (?.) or not, the table a literal
// and the key a fast form. The row's map is never built. Where the VM
// would fail (a field of no row without ?.), it does not decide.
func fastLookupField(m *ast.MemberNode, slot slots) Fast {
	if slot.field == nil || m.Method {
		return nil
	}
	name, isStr := m.Property.(*ast.StringNode)
	call, isCall := m.Node.(*ast.CallNode)
	if !isStr || !isCall {
		return nil
	}
	callee, isID := call.Callee.(*ast.IdentifierNode)
	// The table and the key, then the event time and the marks that the
	// compile adds (callMetaArgs), which Fast does not need: a table
	// that reads them does not decide.
	if !isID || callee.Value != LookupFunction || len(call.Arguments) != 4 {
		return nil
	}
	table, isStr := call.Arguments[0].(*ast.StringNode)
	if !isStr {
		return nil
	}
	key := fastNode(call.Arguments[1], slot)
	if key == nil {
		return nil
	}
	field, t, f, optional := slot.field, table.Value, name.Value, m.Optional
	return func(vars []any) (any, bool) {
		k, ok := key(vars)
		if !ok {
			return nil, false
		}
		v, found, ok := field(t, k, f)
		if !ok || (!found && !optional) {
			return nil, false
		}
		return v, true
	}
}
