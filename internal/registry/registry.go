package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"golang.org/x/sync/singleflight"

	"github.com/sidestream/sidestream/internal/wire"
)

// Client is what the cache needs of a schema registry; *sr.Client (built
// with sr.NewClient: URLs, BasicAuth, DialTLSConfig) satisfies it.
type Client interface {
	SchemaByID(ctx context.Context, id int) (sr.Schema, error)
	SchemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error)
}

var _ Client = (*sr.Client)(nil)

// Hooks observe the cache; metrics.RegistryMetrics satisfies it. Calls
// are made on the decoding goroutine: keep them cheap.
type Hooks interface {
	// OnLookup: one schema id resolved for a record; hit: from the cache.
	OnLookup(hit bool)
	// OnError: one registry error, by kind (ErrorUnknownID,
	// ErrorUnavailable, ErrorBadSchema).
	OnError(kind string)
}

type noHooks struct{}

func (noHooks) OnLookup(bool)  {}
func (noHooks) OnError(string) {}

// Opt configures a Registry.
type Opt func(*Registry)

// WithHooks observes lookups, hits and errors. Default: none.
func WithHooks(h Hooks) Opt { return func(r *Registry) { r.hooks = h } }

// WithFetchTimeout bounds one fetch of a schema and its references; past
// it the lookup is an UnavailableError. Default 10s.
func WithFetchTimeout(d time.Duration) Opt { return func(r *Registry) { r.timeout = d } }

// WithUnknownTTL is how long an id the registry answered 404 for is
// remembered as unknown before it is asked again (so a stream of records
// with a bogus id costs one request per TTL, not one per record).
// Default 30s; 0: ask every time.
func WithUnknownTTL(d time.Duration) Opt { return func(r *Registry) { r.unknownTTL = d } }

// maxRefDepth bounds nested schema references (a cycle is also refused).
const maxRefDepth = 16

// Registry is a cache of compiled schemas by id in front of a schema
// registry client. Safe for concurrent use; concurrent lookups of one id
// share one fetch. A schema by id never changes, so hits never expire.
type Registry struct {
	client     Client
	hooks      Hooks
	timeout    time.Duration
	unknownTTL time.Duration
	now        func() time.Time

	mu      sync.RWMutex
	byID    map[int]*Schema
	unknown map[int]time.Time // id -> when its 404 expires
	group   singleflight.Group
}

// New returns a cache in front of client.
func New(client Client, opts ...Opt) (*Registry, error) {
	if client == nil {
		return nil, errors.New("registry: nil client")
	}
	r := &Registry{client: client, hooks: noHooks{}, timeout: 10 * time.Second, unknownTTL: 30 * time.Second,
		now: time.Now, byID: map[int]*Schema{}, unknown: map[int]time.Time{}}
	for _, o := range opts {
		o(r)
	}
	if r.hooks == nil {
		r.hooks = noHooks{}
	}
	if r.timeout <= 0 {
		return nil, fmt.Errorf("registry: fetch timeout %s must be positive", r.timeout)
	}
	if r.unknownTTL < 0 {
		return nil, fmt.Errorf("registry: unknown-id ttl %s must not be negative", r.unknownTTL)
	}
	return r, nil
}

// Lookup returns the compiled schema of id. Errors: a *RecordError with
// ReasonUnknownSchemaID (the registry answered 404), an *UnavailableError
// (retry later), or ctx's error. A schema that does not compile is
// returned (Schema.Err says why) and cached: every record of it is dirty.
func (r *Registry) Lookup(ctx context.Context, id int) (*Schema, error) {
	r.mu.RLock()
	s, ok := r.byID[id]
	exp, gone := r.unknown[id]
	r.mu.RUnlock()
	if ok {
		r.hooks.OnLookup(true)
		return s, nil
	}
	if gone && r.now().Before(exp) {
		r.hooks.OnLookup(true)
		r.hooks.OnError(ErrorUnknownID)
		return nil, unknownErr(id)
	}
	r.hooks.OnLookup(false)
	ch := r.group.DoChan(strconv.Itoa(id), func() (any, error) {
		// Detached from one caller's cancel (others may share the
		// fetch), bounded by the fetch timeout.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
		defer cancel()
		return r.fetch(fctx, id)
	})
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("look up schema id %d: %w", id, ctx.Err())
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*Schema), nil
	}
}

func unknownErr(id int) *RecordError {
	return recErr(wire.ReasonUnknownSchemaID, id, "schema id %d is not in the schema registry (404)", id)
}

// fetch asks the registry for id and its references and compiles it; it
// runs once per id at a time (singleflight) and stores the outcome.
func (r *Registry) fetch(ctx context.Context, id int) (*Schema, error) {
	// A lookup that missed the cache just as an earlier fetch of id
	// stored it gets that, without asking again.
	r.mu.RLock()
	s, ok := r.byID[id]
	r.mu.RUnlock()
	if ok {
		return s, nil
	}
	raw, err := r.client.SchemaByID(ctx, id)
	if err != nil {
		if notFound(err) {
			r.hooks.OnError(ErrorUnknownID)
			if r.unknownTTL > 0 {
				r.mu.Lock()
				r.rememberUnknown(id)
				r.mu.Unlock()
			}
			return nil, unknownErr(id)
		}
		r.hooks.OnError(ErrorUnavailable)
		return nil, &UnavailableError{SchemaID: id, Err: err}
	}
	refs, err := r.references(ctx, raw.References, 0, map[string]bool{})
	switch {
	case IsRetryable(err):
		r.hooks.OnError(ErrorUnavailable)
		return nil, withID(err, id)
	case err != nil:
		s = &Schema{ID: id, Type: raw.Type, Err: err}
	default:
		s = compile(ctx, id, raw, refs)
		if s.Err != nil && ctx.Err() != nil {
			// Out of time while compiling: not the schema's fault.
			r.hooks.OnError(ErrorUnavailable)
			return nil, &UnavailableError{SchemaID: id, Err: fmt.Errorf("compile: %w", ctx.Err())}
		}
	}
	if s.Err != nil {
		r.hooks.OnError(ErrorBadSchema)
	}
	r.mu.Lock()
	r.byID[id] = s
	delete(r.unknown, id)
	r.mu.Unlock()
	return s, nil
}

// maxUnknown bounds the remembered unknown ids: a stream of records with
// random ids must not grow the map without end.
const maxUnknown = 1 << 16

// rememberUnknown records id as unknown until the TTL; r.mu is held.
func (r *Registry) rememberUnknown(id int) {
	now := r.now()
	if len(r.unknown) >= maxUnknown {
		for k, exp := range r.unknown {
			if !now.Before(exp) {
				delete(r.unknown, k)
			}
		}
		if len(r.unknown) >= maxUnknown {
			clear(r.unknown) // asked again: one request per id, as without the TTL
		}
	}
	r.unknown[id] = now.Add(r.unknownTTL)
}

func withID(err error, id int) error {
	var u *UnavailableError
	if errors.As(err, &u) {
		return &UnavailableError{SchemaID: id, Err: u.Err}
	}
	return err
}

// reference is one schema a schema references: its name (an Avro named
// type's source, a .proto import path, a JSON Schema $ref URL) and text.
type reference struct {
	name string
	sr.Schema
}

// references resolves refs depth first: each schema's own references come
// before it, so a parser can take them in order. A 404 is a permanent
// error of the referencing schema; anything else is an UnavailableError.
func (r *Registry) references(ctx context.Context, refs []sr.SchemaReference, depth int, seen map[string]bool) ([]reference, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if depth >= maxRefDepth {
		return nil, fmt.Errorf("references nested deeper than %d", maxRefDepth)
	}
	var out []reference
	for _, ref := range refs {
		key := ref.Subject + "/" + strconv.Itoa(ref.Version)
		if seen[key] {
			continue // shared or cyclic: taken once
		}
		seen[key] = true
		ss, err := r.client.SchemaByVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			if notFound(err) {
				return nil, fmt.Errorf("reference %q (subject %q version %d) is not in the registry", ref.Name, ref.Subject, ref.Version)
			}
			return nil, &UnavailableError{Err: fmt.Errorf("reference %q (subject %q version %d): %w", ref.Name, ref.Subject, ref.Version, err)}
		}
		sub, err := r.references(ctx, ss.References, depth+1, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
		out = append(out, reference{name: ref.Name, Schema: ss.Schema})
	}
	return out, nil
}
