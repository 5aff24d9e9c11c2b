package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
)

// missingRecheck is how long a computed topic found missing under
// missing: require stays missing before the brokers are asked again.
const missingRecheck = 10 * time.Second

// topicResolver is stage one's TopicResolver: whether a computed topic
// exists, creating it under missing: create. Its answers are cached (an
// existing topic for good, a missing one for missingRecheck), so a
// record asks the brokers only for a topic not seen before. Creation is
// synchronous: under exactly-once the topic exists before any record of
// the transaction is produced to it.
type topicResolver struct {
	p  *Processor
	mu sync.Mutex
	// exists are the topics known to exist; missing when each was last
	// found missing.
	exists  map[string]bool
	missing map[string]time.Time
	// creating serialises the creations (one topic at a time).
	creating sync.Mutex
}

func newTopicResolver(p *Processor) *topicResolver {
	return &topicResolver{p: p, exists: map[string]bool{}, missing: map[string]time.Time{}}
}

var _ stageone.TopicResolver = (*topicResolver)(nil)

// Resolve implements stageone.TopicResolver.
func (r *topicResolver) Resolve(ctx context.Context, route *plan.RouteNode, topic string) error {
	r.mu.Lock()
	ok := r.exists[topic]
	at, wasMissing := r.missing[topic]
	r.mu.Unlock()
	if ok {
		return nil
	}
	if wasMissing && !route.TopicFrom.Create && time.Since(at) < missingRecheck {
		return stageone.ErrTopicMissing
	}
	if route.TopicFrom.Create {
		r.creating.Lock()
		defer r.creating.Unlock()
	}
	found, err := r.lookup(ctx, topic)
	if err != nil {
		return err
	}
	if !found && route.TopicFrom.Create {
		if err := r.create(ctx, route, topic); err != nil {
			return err
		}
		found = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !found {
		r.missing[topic] = time.Now()
		return stageone.ErrTopicMissing
	}
	delete(r.missing, topic)
	r.exists[topic] = true
	return nil
}

// lookup asks the brokers whether topic exists.
func (r *topicResolver) lookup(ctx context.Context, topic string) (bool, error) {
	exists, _, err := r.metadata(ctx, topic)
	return exists, err
}

// metadata asks the brokers about topic: whether it exists and whether
// every partition has a leader. It sends the request itself: kadm's
// ListTopics answers from the client's metadata cache, which would keep
// a topic just created missing for metadata_min_age.
func (r *topicResolver) metadata(ctx context.Context, topic string) (exists, led bool, err error) {
	if r.p.admCl == nil {
		return false, false, errors.New("computed topics: no admin client yet")
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, r.p.admCl)
	if err != nil {
		return false, false, fmt.Errorf("metadata of topic %q: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return false, false, nil
		case errors.Is(err, kerr.LeaderNotAvailable):
			return true, false, nil
		case err != nil:
			return false, false, fmt.Errorf("topic %q: %w", topic, err)
		}
		led = len(t.Partitions) > 0
		for _, p := range t.Partitions {
			led = led && p.Leader >= 0 && p.ErrorCode == 0
		}
		return true, led, nil
	}
	return false, false, nil
}

// create makes topic with the route's topic settings and waits until
// its partitions have leaders, so the producer finds it. A refusal the
// brokers will repeat is the record's (*stageone.TopicRefusedError).
func (r *topicResolver) create(ctx context.Context, route *plan.RouteNode, topic string) error {
	s := r.p.top.Settings.Topics
	configs := r.p.top.CreateConfigsOf(route)
	resp, err := r.p.adm.CreateTopic(ctx, s.Partitions, s.ReplicationFactor, configs, topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		r.p.m.TopicCreated(route.Name)
		r.p.log.Info("created computed topic", "route", route.Name, "topic", topic, "partitions", s.Partitions, "configs", showConfigs(configs))
	case errors.Is(err, kerr.TopicAlreadyExists):
	case refusedCreate(err):
		return &stageone.TopicRefusedError{Err: err}
	default:
		return fmt.Errorf("create computed topic %q: %w", topic, err)
	}
	return r.awaitLeaders(ctx, topic)
}

// awaitLeaders waits, at most 30 s, until every partition of topic has a
// leader in the brokers' metadata.
func (r *topicResolver) awaitLeaders(ctx context.Context, topic string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, led, err := r.metadata(ctx, topic); err == nil && led {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("computed topic %q: created, but its partitions have no leader after 30s", topic)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// refusedCreate says whether a CreateTopics error is a refusal the
// brokers will repeat for this topic: the record's, not the batch's.
func refusedCreate(err error) bool {
	for _, e := range []error{kerr.PolicyViolation, kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.InvalidTopicException, kerr.InvalidPartitions, kerr.InvalidReplicationFactor, kerr.InvalidConfig,
		kerr.InvalidReplicaAssignment, kerr.InvalidRequest} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
