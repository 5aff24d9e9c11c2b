package runtime

import (
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// WithSideSampler hands fn, after every successful commit, the latest
// records that commit wrote to the dirty route and the late routes (at
// most sampleCap per topic) and to the incomplete routes of assembly routes, for a live view. fn runs on the poll loop:
// it must copy what it keeps and return quickly. Records of aborted
// transactions are never handed over. Default: none.
func WithSideSampler(fn func([]*kgo.Record)) Opt { return func(o *opts) { o.sampler = fn } }

// sampleCap bounds the side records kept per topic and commit.
const sampleCap = 32

// sideSamples collects the side records of the open commit interval.
type sideSamples struct {
	fn func([]*kgo.Record)
	// topics are the side topics: a few, so a slice beats a map on the
	// path of every record written.
	topics []string
	mu     sync.Mutex
	by     map[string][]*kgo.Record
}

func newSideSamples(p *Processor) *sideSamples {
	if p.opts.sampler == nil {
		return nil
	}
	s := &sideSamples{fn: p.opts.sampler, topics: []string{p.top.Dirty.Topic}, by: map[string][]*kgo.Record{}}
	for _, r := range p.top.Windows() {
		if lt := r.Window.Spec.LateTopic; lt != "" {
			s.topics = append(s.topics, lt)
		}
	}
	for _, r := range p.top.Routes {
		if a := r.Assembly; a != nil && a.Spec.IncompleteTopic != "" {
			s.topics = append(s.topics, a.Spec.IncompleteTopic)
		}
		if ot := r.OverflowTopic(); ot != "" {
			s.topics = append(s.topics, ot)
		}
	}
	return s
}

// wrap returns produce, seeing the side records on their way.
func (s *sideSamples) wrap(produce func(*kgo.Record)) func(*kgo.Record) {
	if s == nil {
		return produce
	}
	return func(r *kgo.Record) {
		if slices.Contains(s.topics, r.Topic) {
			s.mu.Lock()
			b := append(s.by[r.Topic], r)
			if len(b) > sampleCap {
				b = b[len(b)-sampleCap:]
			}
			s.by[r.Topic] = b
			s.mu.Unlock()
		}
		produce(r)
	}
}

// committed hands the collected records to fn; discard forgets them.
func (s *sideSamples) committed() {
	if s == nil {
		return
	}
	s.mu.Lock()
	var out []*kgo.Record
	for _, rs := range s.by {
		out = append(out, rs...)
	}
	s.by = map[string][]*kgo.Record{}
	s.mu.Unlock()
	if len(out) > 0 {
		s.fn(out)
	}
}

func (s *sideSamples) discard() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.by = map[string][]*kgo.Record{}
	s.mu.Unlock()
}
