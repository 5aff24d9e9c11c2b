// Package topology owns the topology config: the YAML model, its
// validation with FILE:LINE:COL messages, compilation of expressions and
// schemas into a graph the runtime executes, and describing that graph.
//
// It must never import another sidestream package nor talk to a broker:
// everything here is checkable offline, by `router validate`.
package config
