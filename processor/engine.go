package processor

import (
	"github.com/sidestream/sidestream/kclient"
	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/pipeline"
	"github.com/sidestream/sidestream/registry"
	"github.com/sidestream/sidestream/topology"
)

// engine is stage one, the embedded pipeline.Engine (decode, route,
// parts, dirty records); stage two (processor/stateful) runs on the same
// pipeline.Engine.
type engine struct {
	*pipeline.Engine
}

// newEngine builds stage one. The registry-backed inputs (avro,
// protobuf, json_schema) share one schema registry client and one schema
// cache; each input topic gets its decoder, built once here.
func newEngine(t *topology.Topology, m *metrics.Metrics) (*engine, error) {
	decs, err := registryDecoders(t, m)
	if err != nil {
		return nil, err
	}
	if len(decs) == 0 {
		return &engine{Engine: pipeline.New(t)}, nil
	}
	return &engine{Engine: pipeline.New(t, pipeline.WithDecoders(decs))}, nil
}

func registryDecoders(t *topology.Topology, m *metrics.Metrics) (map[string]pipeline.RegistryDecoder, error) {
	var reg *registry.Registry
	decs := map[string]pipeline.RegistryDecoder{}
	for _, in := range t.Inputs {
		if !topology.RegistryFormat(in.Format) {
			continue
		}
		if reg == nil {
			cl, err := kclient.RegistryClient(t.Config.SchemaRegistry)
			if err != nil {
				return nil, err
			}
			if reg, err = registry.New(cl, registry.WithHooks(m.SchemaRegistry)); err != nil {
				return nil, err
			}
		}
		d, err := registry.NewDecoder(reg, registry.Format(in.Format))
		if err != nil {
			return nil, err
		}
		decs[in.Topic] = d
	}
	return decs, nil
}
