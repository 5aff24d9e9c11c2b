package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/window"
	"github.com/sidestream/sidestream/internal/wire"
)

// Aligned watermarks, stage one (internal/operator/window/aligned.go is stage two).
//
// Each input partition is a source. Stage one keeps, per source, the
// maximum event time of the records it decoded, in offset order. It
// stamps every record it writes to a window's repartition topic with that
// maximum as it was before the record (wire.HeaderSourceMax), and at each
// commit writes a mark with the new maximum to every partition of every
// window repartition topic (wire.HeaderMark), so a task hears of a source's
// progress even when none of its records went there. The maximum is
// committed as the metadata of the source's offset, in the same
// transaction as the offset, and restored from there: a replay after a
// crash stamps every record exactly as the first run did.

// srcProgress is one source's progress. Only the goroutine processing the
// partition touches max during a poll; the commit path reads it after.
type srcProgress struct {
	max  int64 // maximum event time decoded, math.MinInt64 before any
	sent int64 // the maximum last written as a mark in this session
}

// sourceTracker holds the progress of the input partitions this process
// consumes. It is dropped with the other state (revoke, abort, new
// session) and restored from the committed offsets' metadata.
//
// It also holds the state witnesses of direct routes (repartition:
// false): held names, by the route's (virtual) repartition topic and
// partition, the direct tasks whose changelog partition holds state (it
// was not empty at restore, or the task wrote to it since). Each is
// committed in the metadata of the offsets of the input partitions of the
// same number, so a later restore that finds that changelog partition
// empty knows it lost state, where a route with a repartition topic has
// the group's committed offset on it as the witness.
type sourceTracker struct {
	mu    sync.Mutex
	parts map[tp]*srcProgress
	held  map[tp]string // direct task → its route's name
}

func newSourceTracker() *sourceTracker {
	return &sourceTracker{parts: map[tp]*srcProgress{}, held: map[tp]string{}}
}

// hold records that a direct task's changelog partition holds state.
func (s *sourceTracker) hold(rep string, part int32, route string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[tp{rep, part}] = route
}

// release forgets that witness: the task starts empty by choice.
func (s *sourceTracker) release(rep string, part int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, tp{rep, part})
}

// holds reports whether a direct task's changelog partition must hold
// state.
func (s *sourceTracker) holds(rep string, part int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[tp{rep, part}]
	return ok
}

func (s *sourceTracker) get(topic string, part int32) *srcProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parts[tp{topic, part}]
}

func (s *sourceTracker) drop(parts map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if parts == nil {
		clear(s.parts)
		clear(s.held)
		return
	}
	for t, ps := range parts {
		for _, p := range ps {
			delete(s.parts, tp{t, p})
			delete(s.held, tp{t, p})
		}
	}
}

// offsetMeta is the committed offset metadata of an input partition: its
// maximum event time, and the direct routes whose changelog partition of
// the same number holds state.
type offsetMeta struct {
	MaxEventTime *int64   `json:"max_event_time,omitempty"`
	State        []string `json:"state,omitempty"`
}

// encodeOffsetMeta encodes the metadata; max is math.MinInt64 when the
// partition has no progress.
func encodeOffsetMeta(max int64, state []string) string {
	m := offsetMeta{State: state}
	if max != math.MinInt64 {
		m.MaxEventTime = &max
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// decodeOffsetMeta reads what encodeOffsetMeta wrote; anything else (no
// commit yet, a commit of another client) is no progress and no state.
func decodeOffsetMeta(s string) (max int64, state []string) {
	var m offsetMeta
	if json.Unmarshal([]byte(s), &m) != nil {
		return math.MinInt64, nil
	}
	max = math.MinInt64
	if m.MaxEventTime != nil && *m.MaxEventTime >= window.MinEventTime && *m.MaxEventTime <= window.MaxEventTime {
		max = *m.MaxEventTime
	}
	return max, m.State
}

// loadSources restores the progress of input partitions not held yet
// from their committed offsets' metadata (stable offsets only: an open
// transaction's commit is waited for).
func (p *Processor) loadSources(ctx context.Context, ftps []kgo.FetchTopicPartition) error {
	if !p.stage.HasWindows() && !p.stage.HasDirectAssemblies() {
		return nil
	}
	var missing []tp
	for _, f := range ftps {
		if p.stage.IsRepartition(f.Topic) {
			continue
		}
		if p.src.get(f.Topic, f.Partition) == nil {
			missing = append(missing, tp{f.Topic, f.Partition})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.txnTimeout+30*time.Second)
	defer cancel()
	var resp kadm.OffsetResponses
	for {
		var err error
		resp, err = p.adm.FetchOffsets(kadm.RequireStable(ctx), p.top.Settings.ApplicationID)
		if err == nil {
			err = resp.Error()
		}
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restore source progress from the committed offsets of group %s: %w", p.top.Settings.ApplicationID, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	direct := map[string]string{} // route name → virtual repartition topic
	for _, rep := range p.stage.DirectTopics() {
		direct[p.stage.RouteOf(rep)] = rep
	}
	p.src.mu.Lock()
	defer p.src.mu.Unlock()
	for _, k := range missing {
		m := int64(math.MinInt64)
		if o, ok := resp.Lookup(k.topic, k.partition); ok {
			var state []string
			m, state = decodeOffsetMeta(o.Metadata)
			for _, route := range state {
				if rep, ok := direct[route]; ok {
					p.src.held[tp{rep, k.partition}] = route
				}
			}
		}
		p.src.parts[k] = &srcProgress{max: m, sent: math.MinInt64}
	}
	return nil
}

// meta is the offset metadata of an input partition: its progress and
// the direct routes holding state in its partition number; nil when it
// has neither (or is no input partition).
func (s *sourceTracker) meta(topic string, part int32) *string {
	sp := s.parts[tp{topic, part}]
	if sp == nil {
		return nil
	}
	var state []string
	for k, route := range s.held {
		if k.partition == part {
			state = append(state, route)
		}
	}
	if sp.max == math.MinInt64 && len(state) == 0 {
		return nil
	}
	slices.Sort(state)
	m := encodeOffsetMeta(sp.max, state)
	return &m
}

// commitMeta puts each source's progress into the metadata of its offset
// in an offset commit: transactional (exactly-once) or plain
// (at-least-once), so both guarantees write the same metadata.
func (s *sourceTracker) commitMeta(req kmsg.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := func(topic string, part int32, md **string) { *md = cmp.Or(s.meta(topic, part), *md) }
	switch req := req.(type) {
	case *kmsg.TxnOffsetCommitRequest:
		for _, t := range req.Topics {
			for j := range t.Partitions {
				set(t.Topic, t.Partitions[j].Partition, &t.Partitions[j].Metadata)
			}
		}
	case *kmsg.OffsetCommitRequest:
		for _, t := range req.Topics {
			for j := range t.Partitions {
				set(t.Topic, t.Partitions[j].Partition, &t.Partitions[j].Metadata)
			}
		}
	default:
		return fmt.Errorf("offset metadata: unexpected request %T", req)
	}
	return nil
}

// marks are the mark records of this commit: every source whose maximum
// moved since its last mark, to every partition of every window
// repartition topic.
func (p *Processor) marks(tally *metrics.Tally) []*kgo.Record {
	parts := p.stage.Partitions()
	if !p.stage.HasWindows() || parts == 0 {
		return nil
	}
	topics := p.stage.MarkTopics()
	p.src.mu.Lock()
	defer p.src.mu.Unlock()
	var out []*kgo.Record
	for k, sp := range p.src.parts {
		if sp.max == math.MinInt64 || sp.max == sp.sent {
			continue
		}
		sp.sent = sp.max
		hs := []kgo.RecordHeader{
			{Key: wire.HeaderMark, Value: []byte("1")},
			{Key: wire.HeaderTopic, Value: []byte(k.topic)},
			{Key: wire.HeaderPartition, Value: []byte(strconv.Itoa(int(k.partition)))},
			{Key: wire.HeaderSourceMax, Value: []byte(strconv.FormatInt(sp.max, 10))},
		}
		for _, topic := range topics {
			for q := range parts {
				out = append(out, &kgo.Record{Topic: topic, Partition: q, Headers: hs, Value: []byte{}})
				tally.MarksWritten++
			}
		}
	}
	return out
}
