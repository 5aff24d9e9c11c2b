package config

import (
	"fmt"
	"maps"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// What the plan's compiler (internal/plan) needs of the model beyond its
// exported fields: the model stays the one place that knows schema files,
// the derivation of connect-json fields and where a path was written.

// LoadSchema compiles a JSON Schema file named in the config, relative
// to dir.
func LoadSchema(dir, path string) (*jsonschema.Schema, error) { return loadSchema(dir, path) }

// DirOf is the folder part of a config file's path ("" or ending in /),
// which relative schema paths resolve against.
func DirOf(path string) string { return dirOf(path) }

// RouteLine is the line of a config path such as routes[2] in the loaded
// file (0: unknown, e.g. a config built in code).
func (c *Config) RouteLine(path string) int { return c.routeLine(path) }

// ConnectSchemaOf derives the connect-json (and avro) schema of route r
// from its compiled projections and aggregates and the inputs' JSON
// Schemas (schemas[i] is topics[i]'s, nil when it has none). A route
// whose fields cannot be derived is an error naming the first reason.
func ConnectSchemaOf(r Route, exprs, aggs []*Expr, topics []string, schemas []*jsonschema.Schema) (*ConnectSchema, error) {
	ins := make([]inputSchema, len(topics))
	for i := range topics {
		ins[i] = inputSchema{topic: topics[i], schema: schemas[i]}
	}
	cs, probs := connectSchema("route "+r.Name, r, exprs, aggs, ins)
	if len(probs) > 0 {
		return nil, fmt.Errorf("route %q: %s", r.Name, probs[0].msg)
	}
	return cs, nil
}

// InputFields are the input fields a connect-json schema reads (its
// pass-through fields), which stage one must extract.
func (c *ConnectSchema) InputFields() []string { return c.inputFields() }

// InternalTopicConfigs are the topic configs the router always sets on
// the repartition and changelog topics it creates, over topics.configs.
func InternalTopicConfigs() (repartition, changelog map[string]string) {
	return maps.Clone(repartitionConfigs), maps.Clone(changelogConfigs)
}
