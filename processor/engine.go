package processor

import (
	"github.com/sidestream/sidestream/kclient"
	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/pipeline"
	"github.com/sidestream/sidestream/topology"
)

// engine is stage one, the embedded pipeline.Engine (decode, route,
// parts, dirty records); stage two (processor/stateful) runs on the same
// pipeline.Engine.
type engine struct {
	*pipeline.Engine
	// avroIDs are the avro routes' schema ids, set by Run before the
	// first poll (avroregister.go).
	avroIDs *pipeline.SchemaIDs
}

// newEngine builds stage one. The registry-backed inputs (avro,
// protobuf, json_schema) share one schema registry client and one schema
// cache; each input topic gets its decoder, built once here. The avro
// routes' schema ids are set later, when Run has registered them.
func newEngine(t *topology.Topology, m *metrics.Metrics) (*engine, error) {
	decs, err := kclient.RegistryDecoders(t, m.SchemaRegistry)
	if err != nil {
		return nil, err
	}
	ids := pipeline.NewSchemaIDs(nil)
	opts := []pipeline.Option{pipeline.WithSchemaIDs(ids)}
	if len(decs) > 0 {
		byTopic := make(map[string]pipeline.RegistryDecoder, len(decs))
		for topic, d := range decs {
			byTopic[topic] = d
		}
		opts = append(opts, pipeline.WithDecoders(byTopic))
	}
	return &engine{Engine: pipeline.New(t, opts...), avroIDs: ids}, nil
}
