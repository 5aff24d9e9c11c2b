// Package probe is `router probe URL`: GET a URL until it answers 2xx or
// a timeout passes. The image has no shell and no wget, so the chart's
// `helm test` hook (and a container HEALTHCHECK) runs the router itself.
// It never parses flags and never exits the process.
package probe
