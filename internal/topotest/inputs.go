package topotest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/plan"
)

// inputRecord is the record of one input step (Partition -1: by key).
func inputRecord(tf *File, top *plan.Plan, x Input, reg *testRegistry) (*kgo.Record, error) {
	inputs := top.InputTopics()
	r := &kgo.Record{Topic: x.Topic, Partition: -1}
	if r.Topic == "" {
		r.Topic = inputs[0]
	}
	if !contains(inputs, r.Topic) {
		return nil, fmt.Errorf("topic %q is not an input of the topology (%s)", r.Topic, strings.Join(inputs, ", "))
	}
	if x.Partition != nil {
		r.Partition = *x.Partition
	}
	if x.Key != nil {
		r.Key = []byte(*x.Key)
	}
	v, err := inputValue(filepath.Dir(tf.path), r.Topic, x, reg)
	if err != nil {
		return nil, err
	}
	r.Value = v
	for k, v := range x.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	sort.Slice(r.Headers, func(a, b int) bool { return r.Headers[a].Key < r.Headers[b].Key })
	if x.Timestamp > 0 {
		r.Timestamp = time.UnixMilli(x.Timestamp)
	}
	return r, nil
}

func inputValue(dir, topic string, x Input, reg *testRegistry) ([]byte, error) {
	n := 0
	for _, set := range []bool{x.Value.Kind != 0, x.ValueFile != "", x.ValueBase64 != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return nil, errors.New("give one of value, value_file and value_base64")
	case x.SchemaID != 0 && (x.Value.Kind != yaml.MappingNode || reg == nil || reg.inputs[topic] == nil):
		return nil, fmt.Errorf("schema_id frames a JSON object value written to a registry-backed input (%s is not one, or the value is raw)", topic)
	case x.ValueFile != "":
		return os.ReadFile(filepath.Join(dir, x.ValueFile))
	case x.ValueBase64 != "":
		b, err := base64.StdEncoding.DecodeString(x.ValueBase64)
		if err != nil {
			return nil, fmt.Errorf("value_base64: %v", err)
		}
		return b, nil
	case x.Value.Kind == 0:
		return nil, nil
	}
	b, err := nodeBytes(&x.Value)
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	if x.Value.Kind == yaml.ScalarNode && (x.Value.ShortTag() == "!!str" || x.Value.ShortTag() == "!!null") {
		return b, nil // raw: as it is, also to a registry-backed input
	}
	framed, ok, err := reg.encode(topic, b, x.SchemaID)
	switch {
	case err != nil:
		return nil, fmt.Errorf("value: %w", err)
	case ok:
		return framed, nil
	}
	return b, nil
}

// nodeBytes is a YAML value as record bytes: a string as it is, null as a
// null value, anything else as JSON.
func nodeBytes(n *yaml.Node) ([]byte, error) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return []byte(n.Value), nil
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
