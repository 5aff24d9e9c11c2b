package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/retry"
)

// The avro routes' record schemas are registered before the first poll,
// each under its topic's <topic>-value subject (TopicNameStrategy), and
// the ids the registry gives are handed to stage one (stageone.SchemaIDs),
// which holds no client. Registering a schema the subject already has
// returns its id, so a restart registers nothing new.
//
// A refusal (the subject's compatibility rejects the schema, 409; an
// invalid schema, 422; any other 4xx) is a start error naming the route
// and its line: no retry can heal it, and writing under another schema
// would break the topic's readers. A registry that cannot answer (down, a
// timeout, 408, 429, 5xx) is waited for as an input's registry outage is:
// /readyz says why, /healthz stays 200, and the registration is tried
// again after 1 s, doubling to 8 s; nothing is polled meanwhile.

// registerTimeout bounds one registration request.
const registerTimeout = 10 * time.Second

// schemaRegistrar is what registration needs of the registry (sr.Client).
type schemaRegistrar interface {
	RegisterSchema(ctx context.Context, subject string, s sr.Schema, id, version int) (int, error)
}

var _ schemaRegistrar = (*sr.Client)(nil)

// RegistrationError is a schema registration the registry refused: a
// start error, Run returns it.
type RegistrationError struct {
	Route   *plan.RouteNode
	Subject string
	Err     error
}

func (e *RegistrationError) Error() string {
	return fmt.Sprintf("%s, route %q: subject %s refuses the schema: %v", e.Route.Avro.Where(), e.Route.Name, e.Subject, e.Err)
}

func (e *RegistrationError) Unwrap() error { return e.Err }

// registerAvroOutputs registers every avro route's schema and sets the
// ids stage one writes with. It returns nil once all are registered, a
// *RegistrationError on a refusal, or ctx's error.
func (p *Processor) registerAvroOutputs(ctx context.Context) error {
	routes := p.top.AvroRoutes()
	if len(routes) == 0 {
		return nil
	}
	cl, err := kclient.RegistryClient(p.top.Settings.SchemaRegistry)
	if err != nil {
		return err
	}
	ids := make(map[string]int, len(routes))
	retries := retry.New(time.Second, maxProduceBackoff)
	for len(ids) < len(routes) {
		err := registerEach(ctx, cl, routes, ids)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if re := (*RegistrationError)(nil); errors.As(err, &re) {
			return err
		}
		wait := retries.Next()
		url := p.top.Settings.SchemaRegistry.URL
		p.obs.NotReady(fmt.Sprintf("schema registry %s unavailable: the avro routes' schemas are not registered yet (%v); nothing is processed until they are, tried again in %s", url, err, wait))
		p.log.Error("schema registry unavailable; the avro routes' schemas are not registered, retrying", "url", url, "err", err, "backoff", wait)
		if !p.idle(ctx, wait) {
			return ctx.Err()
		}
	}
	p.eng.avroIDs.Set(ids)
	for _, r := range routes {
		p.log.Info("avro route schema registered", "route", r.Name, "subject", r.Avro.Subject, "schema_id", ids[r.Name])
	}
	return nil
}

// registerEach registers the routes not in ids yet, adding each id: a
// refusal is a *RegistrationError, any other error the registry's.
func registerEach(ctx context.Context, cl schemaRegistrar, routes []*plan.RouteNode, ids map[string]int) error {
	for _, r := range routes {
		if _, ok := ids[r.Name]; ok {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, registerTimeout)
		id, err := cl.RegisterSchema(rctx, r.Avro.Subject, sr.Schema{Schema: r.Avro.Schema, Type: sr.TypeAvro}, -1, -1)
		cancel()
		if err != nil {
			if re, refused := kclient.RegistrationRefused(err); refused {
				return &RegistrationError{Route: r, Subject: r.Avro.Subject, Err: re}
			}
			return fmt.Errorf("register subject %s (route %q): %w", r.Avro.Subject, r.Name, err)
		}
		ids[r.Name] = id
	}
	return nil
}
