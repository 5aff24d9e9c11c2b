package runtime

import (
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
)

// stageOne is stage one, the embedded stageone.Engine (decode, route,
// parts, dirty records); stage two (internal/stagetwo) runs on the same
// stageone.Engine.
type stageOne struct {
	*stageone.Engine
	// avroIDs are the avro routes' schema ids, set by Run before the
	// first poll (avroregister.go).
	avroIDs *stageone.SchemaIDs
}

// newStageOne builds stage one. The registry-backed inputs (avro,
// protobuf, json_schema) share one schema registry client and one schema
// cache; each input topic gets its decoder, built once here. The avro
// routes' schema ids are set later, when Run has registered them.
func newStageOne(t *plan.Plan, m *metrics.Metrics, topics stageone.TopicResolver) (*stageOne, error) {
	decs, err := kclient.RegistryDecoders(t, m.SchemaRegistry)
	if err != nil {
		return nil, err
	}
	ids := stageone.NewSchemaIDs(nil)
	opts := []stageone.Option{stageone.WithSchemaIDs(ids), stageone.WithTopics(topics)}
	if len(decs) > 0 {
		byTopic := make(map[string]stageone.RegistryDecoder, len(decs))
		for topic, d := range decs {
			byTopic[topic] = d
		}
		opts = append(opts, stageone.WithDecoders(byTopic))
	}
	return &stageOne{Engine: stageone.New(t, opts...), avroIDs: ids}, nil
}
