package registry

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"sync"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sidestream/sidestream/internal/wire"
)

type protoCodec struct {
	file  protoreflect.FileDescriptor
	times sync.Map // message full name -> map[string]timeUnit
}

// timesOf is the Timestamp field paths of md, computed once.
func (c *protoCodec) timesOf(md protoreflect.MessageDescriptor) map[string]timeUnit {
	if t, ok := c.times.Load(md.FullName()); ok {
		return t.(map[string]timeUnit)
	}
	t := map[string]timeUnit{}
	protoFields(md, "", t, 0)
	c.times.Store(md.FullName(), t)
	return t
}

// compileProto compiles the registry's .proto text with protocompile.
// References are the imports, by their reference names (the import
// paths); google/protobuf/*.proto come with the compiler.
func compileProto(ctx context.Context, id int, text string, refs []reference) (*protoCodec, error) {
	name := fmt.Sprintf("schema-registry-id-%d.proto", id)
	files := map[string]string{name: text}
	for _, ref := range refs {
		if ref.Type != sr.TypeProtobuf {
			return nil, fmt.Errorf("reference %q is %s, not PROTOBUF", ref.name, ref.Type)
		}
		files[ref.name] = ref.Schema.Schema
	}
	comp := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(files),
		}),
	}
	fds, err := comp.Compile(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("protobuf schema does not compile: %w", err)
	}
	fd := fds.FindFileByPath(name)
	if fd == nil || fd.Messages().Len() == 0 {
		return nil, fmt.Errorf("protobuf schema declares no message")
	}
	return &protoCodec{file: fd}, nil
}

// message selects the message type of a record by its message indexes:
// the first indexes the file's top-level messages, each next one the
// previous message's nested messages ([0]: the first message).
func (c *protoCodec) message(index []int) (protoreflect.MessageDescriptor, error) {
	if len(index) == 0 {
		return nil, fmt.Errorf("no message index")
	}
	msgs := c.file.Messages()
	var md protoreflect.MessageDescriptor
	for depth, i := range index {
		if i < 0 || i >= msgs.Len() {
			return nil, fmt.Errorf("message index %v: %d at depth %d is out of range (%d messages there)", index, i, depth, msgs.Len())
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

func (c *protoCodec) decode(id int, md protoreflect.MessageDescriptor, payload []byte) (fields map[string]any, rerr *RecordError) {
	defer func() {
		if p := recover(); p != nil {
			fields, rerr = nil, recErr(wire.ReasonProtobufDecode, id, "protobuf payload does not decode with schema id %d: %v", id, p)
		}
	}()
	msg := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{RecursionLimit: maxDepth}).Unmarshal(payload, msg); err != nil {
		return nil, recErr(wire.ReasonProtobufDecode, id, "protobuf payload does not decode as %s (schema id %d): %v", md.FullName(), id, err)
	}
	out, err := protoMessage(msg, 0)
	if err != nil {
		return nil, recErr(wire.ReasonProtobufDecode, id, "protobuf value %s (schema id %d): %v", md.FullName(), id, err)
	}
	return out, nil
}

// protoMessage: fields by their proto names. A field with presence
// (message, optional, oneof member, proto2) that is not set is absent;
// a proto3 scalar without presence is its value (zero included: the wire
// cannot tell it from unset); lists and maps are [] and {} when empty.
func protoMessage(m protoreflect.Message, depth int) (map[string]any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	fds := m.Descriptor().Fields()
	out := make(map[string]any, fds.Len())
	for i := range fds.Len() {
		fd := fds.Get(i)
		if fd.HasPresence() && !m.Has(fd) {
			continue
		}
		v, err := protoField(fd, m.Get(fd), depth)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fd.Name(), err)
		}
		out[string(fd.Name())] = v
	}
	return out, nil
}

func protoField(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) (any, error) {
	switch {
	case fd.IsList():
		l := v.List()
		a := make([]any, l.Len())
		for i := range l.Len() {
			e, err := protoSingular(fd, l.Get(i), depth)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			a[i] = e
		}
		return a, nil
	case fd.IsMap():
		m := map[string]any{}
		var ferr error
		v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
			ev, err := protoSingular(fd.MapValue(), e, depth)
			if err != nil {
				ferr = fmt.Errorf("[%q]: %w", k.String(), err)
				return false
			}
			m[k.String()] = ev
			return true
		})
		return m, ferr
	}
	return protoSingular(fd, v, depth)
}

func protoSingular(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) (any, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool(), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return intValue(v.Int()), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		u := v.Uint()
		if u <= math.MaxInt64 {
			return intValue(int64(u)), nil
		}
		return float64(u), nil // beyond int64: a float, as the JSON decoder does
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float(), nil
	case protoreflect.StringKind:
		return v.String(), nil
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes()), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name()), nil
		}
		return int(v.Enum()), nil // a number this schema does not name
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return protoWellKnown(v.Message(), depth+1)
	}
	return nil, fmt.Errorf("unsupported field kind %s", fd.Kind())
}

// protoWellKnown: google.protobuf.Timestamp is epoch ms (floored), a
// wrapper (Int64Value, StringValue, ...) is its value; any other message
// is a map.
func protoWellKnown(m protoreflect.Message, depth int) (any, error) {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		secs := m.Get(md.Fields().ByName("seconds")).Int()
		nanos := m.Get(md.Fields().ByName("nanos")).Int()
		if secs < minEventMillis/1000-1 || secs > maxEventMillis/1000+1 || nanos < 0 || nanos > 999_999_999 {
			return nil, fmt.Errorf("timestamp %ds %dns is outside years 0001-9999 or not normalized", secs, nanos)
		}
		return int(secs*1000 + nanos/1_000_000), nil
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		fd := md.Fields().ByName("value")
		return protoSingular(fd, m.Get(fd), depth)
	}
	return protoMessage(m, depth)
}
