// Package examples ships the example topologies inside the binary, so
// `router demo` runs from any directory.
package examples

import "embed"

// FS holds the example topologies and their schemas.
//
//go:embed *.yaml schemas/*.json schemas/*.avsc
var FS embed.FS

// Default is the topology `router demo` runs.
const Default = "logs-by-level.yaml"
