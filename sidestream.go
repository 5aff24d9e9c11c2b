// Package sidestream embeds the router in a Go program: load a topology
// file, register Go functions its expressions may call, and run it.
//
// It is the one public package of the module; everything else is under
// internal/ and may change without notice. What it promises is what this
// file states: Load and Parse (a topology, validated and compiled),
// the options, Router's Run and the names it reports.
//
//	r, err := sidestream.Load("topology.yaml",
//		sidestream.WithFunction("isVIP", isVIP, new(func(string) bool)))
//	if err != nil { ... }
//	err = r.Run(ctx) // until ctx ends
package sidestream

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/runtime"
	"github.com/sidestream/sidestream/internal/tracing"
)

// Option configures Load and Parse.
type Option func(*options)

type options struct {
	fns        config.Functions
	overrides  config.Overrides
	log        *slog.Logger
	instanceID string
}

// WithFunction makes fn callable from the topology's expressions as
// name(...): in a route's when, key and projection, a window's group_by
// and aggregates, an assembly's ID. types are expr-lang signatures (for
// example new(func(string) bool)) that validation checks each call's
// arguments against, as it does for built-ins; without them fn is called
// with whatever it is given. An error fn returns sends the record to the
// dirty route (expression_error) with the error's text. fn is called
// concurrently from several goroutines and must be safe for that; it
// should be deterministic, since exactly-once replays a batch after a
// failure and must route it the same way.
func WithFunction(name string, fn func(params ...any) (any, error), types ...any) Option {
	return func(o *options) {
		o.fns = append(o.fns, config.Function{Name: name, Fn: fn, Types: types})
	}
}

// WithBrokers overrides the topology's brokers, as --brokers does.
func WithBrokers(brokers ...string) Option {
	return func(o *options) { o.overrides.Brokers = brokers }
}

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithInstanceID names this instance in its group and its transactional
// id (default: the host name), as --instance-id does.
func WithInstanceID(id string) Option { return func(o *options) { o.instanceID = id } }

// Router is a validated, compiled topology, ready to run.
type Router struct {
	plan *plan.Plan
	opts options
}

// Load reads, validates and compiles the topology file at path. A
// problem in the file is an error whose lines read FILE:LINE:COL: message.
func Load(path string, opts ...Option) (*Router, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b, opts...)
}

// Parse is Load for a topology held in memory; name is the file name its
// problems are reported under, and relative schema paths resolve against
// its folder.
func Parse(name string, yaml []byte, opts ...Option) (*Router, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if err := o.fns.Check(); err != nil {
		return nil, err
	}
	cfg, err := config.LoadWith(name, yaml, o.fns)
	if err != nil {
		return nil, err
	}
	if err := cfg.Apply(o.overrides); err != nil {
		return nil, err
	}
	dir := filepath.Dir(name) + string(filepath.Separator)
	p, err := plan.Compile(cfg, dir)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", name, err)
	}
	return &Router{plan: p, opts: o}, nil
}

// Run runs the router until ctx ends or it fails for good; a cancelled
// ctx is a clean stop (nil).
func (r *Router) Run(ctx context.Context) error {
	var ro []runtime.Opt
	if r.opts.log != nil {
		ro = append(ro, runtime.WithLogger(r.opts.log))
	}
	if r.opts.instanceID != "" {
		ro = append(ro, runtime.WithInstanceID(r.opts.instanceID))
	}
	tracer, err := tracing.New(ctx, r.plan)
	if err != nil {
		return err
	}
	defer func() { _ = tracer.Stop(ctx) }()
	ro = append(ro, runtime.WithTracer(tracer))
	p, err := runtime.New(r.plan, ro...)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// Routes are the routes' names, in the file's order.
func (r *Router) Routes() []string {
	out := make([]string, 0, len(r.plan.Routes))
	for _, rt := range r.plan.Routes {
		out = append(out, rt.Name)
	}
	return out
}

// Topic is the topic route writes ("" for no such route).
func (r *Router) Topic(route string) string {
	if rt := r.plan.Route(route); rt != nil {
		return rt.Topic
	}
	return ""
}

// Version is the topology's content fingerprint: equal files give equal
// versions.
func (r *Router) Version() string { return r.plan.Version }
