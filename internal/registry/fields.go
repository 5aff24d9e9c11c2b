package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Fields is what a writer schema says about the values it decodes: the
// field paths they can hold, in the value model (package doc), so a field
// an expression reads can be checked before a record arrives. It is the
// one walk of a schema: the decoders take the logical time fields of
// Value.EventTime from it too.
//
//   - Avro: record fields, through nested records and union branches (a
//     union's fields are its branches' together). Arrays, maps and a
//     record nested in itself may hold anything below them.
//   - Protobuf: message fields by their proto names, through singular
//     message fields at most 8 deep (deeper: anything). Lists and maps
//     may hold anything below them; a Timestamp or wrapper is a value.
//   - JSON Schema: properties, through nested objects. Only an object
//     closed with additionalProperties: false (and no patternProperties
//     or combinators) restricts its fields; any other may hold anything,
//     as the validator lets it.
type Fields struct {
	root  *fieldNode
	times map[string]timeUnit // dotted path -> unit (Avro, Protobuf)
}

// fieldNode is one place in a value: the fields below it (nil: a value
// with no fields, such as a string), or open (anything may be below), and
// the JSON types its value can have (nil: unknown).
type fieldNode struct {
	children map[string]*fieldNode
	open     bool
	types    []string
}

var openNode = &fieldNode{open: true}

// JSON types of the value model, as JSON Schema names them.
const (
	typeInteger = "integer"
	typeNumber  = "number"
	typeString  = "string"
	typeBoolean = "boolean"
	typeArray   = "array"
	typeObject  = "object"
	typeNull    = "null"
)

// leaf is a value with no fields of the JSON types ts.
func leaf(ts ...string) *fieldNode { return &fieldNode{types: ts} }

// openOf is a value that may hold anything below it (an array, a map).
func openOf(t string) *fieldNode { return &fieldNode{open: true, types: []string{t}} }

// orNull is n that may also be absent or null (a copy: nodes are shared).
func orNull(n *fieldNode) *fieldNode {
	if n.types == nil || slices.Contains(n.types, typeNull) {
		return n
	}
	c := *n
	c.types = append(slices.Clip(n.types), typeNull)
	return &c
}

func unionTypes(a, b []string) []string {
	if a == nil || b == nil {
		return nil
	}
	out := slices.Clone(a)
	for _, t := range b {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Has reports whether a value can hold the field at path (one name per
// segment), and whether anything below it may be there too (open: a map,
// an array, an open JSON object).
func (f *Fields) Has(path []string) (has, open bool) {
	n := f.root
	for _, seg := range path {
		c, ok := n.children[seg]
		switch {
		case ok:
			n = c
		case n.open:
			return true, true
		default:
			return false, false
		}
	}
	return true, n.open
}

// Types are the JSON types (integer, number, string, boolean, array,
// object, null) of the value at path, in the value model: null when it
// may be null or absent. Nil when unknown: the path is not there, or is
// below an open value.
func (f *Fields) Types(path []string) []string {
	n := f.root
	for _, seg := range path {
		c, ok := n.children[seg]
		if !ok || n.open {
			return nil
		}
		n = c
	}
	return slices.Clone(n.types)
}

// Names are the field names directly under path (the top level: none),
// sorted; none where the path is not there or may hold anything.
func (f *Fields) Names(path []string) []string {
	n := f.root
	for _, seg := range path {
		c, ok := n.children[seg]
		if !ok || n.open {
			return nil
		}
		n = c
	}
	if n.open {
		return nil
	}
	names := make([]string, 0, len(n.children))
	for k := range n.children {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// merge adds b's fields to a (union branches, the messages of a file).
func merge(a, b *fieldNode) *fieldNode {
	if a == nil {
		return b
	}
	out := &fieldNode{open: a.open || b.open, types: unionTypes(a.types, b.types)}
	if a.children == nil && b.children == nil {
		return out
	}
	out.children = map[string]*fieldNode{}
	for k, v := range a.children {
		if _, both := b.children[k]; !both && b.children != nil {
			v = orNull(v) // absent from b's records
		}
		out.children[k] = v
	}
	for k, v := range b.children {
		if _, both := a.children[k]; !both && a.children != nil {
			v = orNull(v)
		}
		out.children[k] = merge(out.children[k], v)
	}
	return out
}

// avroFields walks an Avro schema; path is the dotted path of s, times
// gets its logical time fields (in a union of two, the first listed), and
// stack holds the records being walked (one nested in itself is open).
func avroFields(s avro.Schema, path string, times map[string]timeUnit, stack map[string]bool) *fieldNode {
	switch x := s.(type) {
	case *avro.RefSchema:
		return avroFields(x.Schema(), path, times, stack)
	case *avro.RecordSchema:
		if stack[x.FullName()] {
			return openNode
		}
		stack[x.FullName()] = true
		defer delete(stack, x.FullName())
		n := &fieldNode{children: make(map[string]*fieldNode, len(x.Fields())), types: []string{typeObject}}
		for _, f := range x.Fields() {
			n.children[f.Name()] = avroFields(f.Type(), join(path, f.Name()), times, stack)
		}
		return n
	case *avro.UnionSchema:
		var n *fieldNode
		null := false
		for _, b := range x.Types() {
			if b.Type() != avro.Null {
				n = merge(n, avroFields(b, path, times, stack))
			} else {
				null = true
			}
		}
		if n == nil {
			return leaf(typeNull)
		}
		if null {
			n = orNull(n)
		}
		return n
	case *avro.ArraySchema:
		return openOf(typeArray)
	case *avro.MapSchema:
		return openOf(typeObject)
	case *avro.EnumSchema:
		return leaf(typeString)
	case *avro.FixedSchema:
		return avroFixedNode(x)
	case *avro.PrimitiveSchema:
		avroTime(x, path, times)
		return leaf(avroPrimitiveTypes(x)...)
	}
	return &fieldNode{}
}

// avroFixedNode is a fixed's value: a duration's three fields, a decimal, or
// base64 text.
func avroFixedNode(x *avro.FixedSchema) *fieldNode {
	switch {
	case x.Logical() != nil && x.Logical().Type() == avro.Duration:
		return &fieldNode{types: []string{typeObject}, children: map[string]*fieldNode{
			"months": leaf(typeInteger), "days": leaf(typeInteger), "milliseconds": leaf(typeInteger)}}
	case x.Logical() != nil && x.Logical().Type() == avro.Decimal:
		return leaf(typeInteger, typeNumber, typeString)
	}
	return leaf(typeString)
}

// avroPrimitiveTypes are the value model's types of an Avro primitive.
func avroPrimitiveTypes(x *avro.PrimitiveSchema) []string {
	if x.Logical() != nil && x.Logical().Type() == avro.Decimal {
		return []string{typeInteger, typeNumber, typeString} // exact: int, float64 or its digits
	}
	switch x.Type() {
	case avro.Null:
		return []string{typeNull}
	case avro.Boolean:
		return []string{typeBoolean}
	case avro.Int, avro.Long:
		return []string{typeInteger}
	case avro.Float, avro.Double:
		return []string{typeNumber}
	case avro.String, avro.Bytes:
		return []string{typeString}
	}
	return nil
}

func avroTime(x *avro.PrimitiveSchema, path string, times map[string]timeUnit) {
	if x.Logical() == nil || path == "" {
		return
	}
	unit := timeUnit(0)
	switch x.Logical().Type() {
	case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
		unit = unitMillis
	case avro.Date:
		unit = unitDays
	}
	if _, ok := times[path]; !ok && unit != 0 {
		times[path] = unit
	}
}

// maxProtoDepth bounds the walk of nested messages (a message may hold
// itself): below it a value may hold anything.
const maxProtoDepth = 8

// protoFields walks a message's fields; times gets its Timestamp fields.
func protoFields(md protoreflect.MessageDescriptor, path string, times map[string]timeUnit, depth int) *fieldNode {
	if depth > maxProtoDepth {
		return openNode
	}
	fds := md.Fields()
	n := &fieldNode{children: make(map[string]*fieldNode, fds.Len()), types: []string{typeObject}}
	for i := range fds.Len() {
		fd := fds.Get(i)
		name := string(fd.Name())
		p := join(path, name)
		var c *fieldNode
		switch {
		case fd.IsList():
			c = openOf(typeArray)
		case fd.IsMap():
			c = openOf(typeObject)
		case fd.Message() == nil:
			c = leaf(protoKindTypes(fd)...)
		case fd.Message().FullName() == "google.protobuf.Timestamp":
			times[p] = unitMillis
			c = leaf(typeInteger)
		case protoWrapper(fd.Message().FullName()):
			c = leaf(protoKindTypes(fd.Message().Fields().ByName("value"))...)
		default:
			c = protoFields(fd.Message(), p, times, depth+1)
		}
		if fd.HasPresence() {
			c = orNull(c) // unset: absent
		}
		n.children[name] = c
	}
	return n
}

// protoKindTypes are the value model's types of a scalar field.
func protoKindTypes(fd protoreflect.FieldDescriptor) []string {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return []string{typeBoolean}
	case protoreflect.EnumKind:
		return []string{typeString, typeInteger} // a number the schema does not name: that int
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return []string{typeInteger, typeNumber} // above int64: float64
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return []string{typeNumber}
	case protoreflect.StringKind, protoreflect.BytesKind:
		return []string{typeString}
	}
	return []string{typeInteger}
}

func protoWrapper(name protoreflect.FullName) bool {
	switch name {
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return true
	}
	return false
}

// protoFileFields are the fields of every message a frame's message
// indexes can select (top-level and nested, not map entries) together:
// the subject's schema does not say which one a record is.
func protoFileFields(fd protoreflect.FileDescriptor) *Fields {
	var root *fieldNode
	var walk func(msgs protoreflect.MessageDescriptors)
	walk = func(msgs protoreflect.MessageDescriptors) {
		for i := range msgs.Len() {
			md := msgs.Get(i)
			if md.IsMapEntry() {
				continue
			}
			root = merge(root, protoFields(md, "", map[string]timeUnit{}, 0))
			walk(md.Messages())
		}
	}
	walk(fd.Messages())
	if root == nil {
		root = &fieldNode{}
	}
	return &Fields{root: root}
}

// maxJSONDepth bounds the walk of a JSON Schema ($refs may cycle).
const maxJSONDepth = 32

// jsonFields walks a JSON Schema's object properties.
func jsonFields(s *jsonschema.Schema, depth int) *fieldNode {
	if s == nil || depth > maxJSONDepth {
		return openNode
	}
	for s.Ref != nil && s.Properties == nil && s.Types == nil {
		s = s.Ref
	}
	if s.Bool != nil {
		return openNode
	}
	ts := jsonTypes(s)
	if s.Properties == nil && s.Types != nil && !slices.Contains(s.Types.ToStrings(), "object") && !slices.Contains(s.Types.ToStrings(), "array") {
		return leaf(ts...) // a string, number, boolean or null
	}
	closed := false
	if b, ok := s.AdditionalProperties.(bool); ok && !b {
		closed = len(s.PatternProperties) == 0 && s.Ref == nil && len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) == 0 &&
			s.If == nil && s.DynamicRef == nil && s.RecursiveRef == nil && len(s.Dependencies)+len(s.DependentSchemas) == 0
	}
	n := &fieldNode{open: !closed, children: make(map[string]*fieldNode, len(s.Properties)), types: ts}
	for name, p := range s.Properties {
		c := jsonFields(p, depth+1)
		if !slices.Contains(s.Required, name) {
			c = orNull(c)
		}
		n.children[name] = c
	}
	return n
}

// jsonTypes are the JSON types a schema admits by its type keyword, or
// its enum or const values (strings, booleans, null); nil otherwise.
func jsonTypes(s *jsonschema.Schema) []string {
	if s.Types != nil {
		return s.Types.ToStrings()
	}
	var vals []any
	switch {
	case s.Enum != nil:
		vals = s.Enum.Values
	case s.Const != nil:
		vals = []any{*s.Const}
	default:
		return nil
	}
	var ts []string
	for _, v := range vals {
		t := ""
		switch v.(type) {
		case nil:
			t = typeNull
		case string:
			t = typeString
		case bool:
			t = typeBoolean
		default:
			return nil
		}
		if !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	return ts
}

// fields is the schema's Fields (nil when it did not compile).
func (s *Schema) fields() *Fields {
	switch {
	case s.Err != nil:
		return nil
	case s.avro != nil:
		return &Fields{root: s.avroFields, times: s.times}
	case s.proto != nil:
		return protoFileFields(s.proto.file)
	case s.json != nil:
		return &Fields{root: jsonFields(s.json.schema, 0)}
	}
	return nil
}

// ErrSubjectNotFound is a subject (or its latest version) the registry
// answered 404 for.
var ErrSubjectNotFound = errors.New("subject not found")

// SubjectSchema is the latest schema of a subject and its Fields.
type SubjectSchema struct {
	Subject string
	Version int
	ID      int
	Type    sr.SchemaType
	Fields  *Fields
}

// Latest fetches the latest schema of subject with its references and
// compiles it as the decoders do (not cached: a subject's latest version
// changes). Errors: ErrSubjectNotFound in the chain (a 404), an
// *UnavailableError (the registry could not answer), ctx's, or a schema
// of another type than format's or that does not compile.
func (r *Registry) Latest(ctx context.Context, subject string, format Format) (*SubjectSchema, error) {
	ss, err := r.client.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("subject %q: %w in the schema registry (404)", subject, ErrSubjectNotFound)
		}
		return nil, &UnavailableError{SchemaID: -1, Err: fmt.Errorf("latest schema of subject %q: %w", subject, err)}
	}
	out := &SubjectSchema{Subject: subject, Version: ss.Version, ID: ss.ID, Type: ss.Type}
	if ss.Type != format.schemaType() {
		return nil, fmt.Errorf("subject %q version %d is a %s schema; an input of format %s expects %s", subject, ss.Version, ss.Type, format, format.schemaType())
	}
	refs, err := r.references(ctx, ss.References, 0, map[string]bool{})
	if err != nil {
		return nil, fmt.Errorf("subject %q version %d: %w", subject, ss.Version, err)
	}
	s := compile(ctx, ss.ID, ss.Schema, refs)
	if s.Err != nil {
		if ctx.Err() != nil {
			return nil, &UnavailableError{SchemaID: ss.ID, Err: fmt.Errorf("compile: %w", ctx.Err())}
		}
		return nil, fmt.Errorf("subject %q version %d (id %d): %w", subject, ss.Version, ss.ID, s.Err)
	}
	out.Fields = s.fields()
	return out, nil
}
