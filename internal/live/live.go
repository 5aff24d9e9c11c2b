package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/redact"
	"github.com/sidestream/sidestream/internal/show"
	"github.com/sidestream/sidestream/internal/sideroute"
	"github.com/sidestream/sidestream/internal/wire"
)

// Defaults of New.
const (
	DefaultSamples  = 20   // records kept per side route kind
	DefaultValueMax = 1024 // bytes of a sampled value shown
	// KindWithheld is a sampled value's kind when api.samples: redacted
	// cannot redact it (not JSON): only its size is shown.
	KindWithheld = "withheld"
	// withheld replaces a free text (an error, a key) that quotes a
	// redacted value.
	withheld = "*** (withheld: it quotes a redacted value)"
)

// State is the live view of one router process. Safe for concurrent use.
type State struct {
	top    *plan.Plan
	m      *metrics.Metrics
	tasks  func() []Task
	status func() (bool, string)
	n      int
	kinds  map[string]string // side topic -> "dirty" or "late"
	mode   string            // api.samples: full, redacted or off
	red    *redact.Redactor
	max    int // bytes of a sampled value shown

	history *History

	mu      sync.Mutex
	samples map[string][]Sample // by kind, newest last
	seq     int64
	tickAt  time.Time
	tick    map[string]float64
	rates   map[string]float64
	cluster *Cluster
}

// Options of New; zero values take the defaults.
type Options struct {
	// Tasks lists the processor's tasks (nil: none).
	Tasks func() []Task
	// Status is the readiness to show (nil: not shown).
	Status func() (bool, string)
	// Samples is how many records of each side route kind are kept.
	Samples int
}

// New returns the live state of top, reading m.
func New(top *plan.Plan, m *metrics.Metrics, o Options) *State {
	if o.Samples <= 0 {
		o.Samples = DefaultSamples
	}
	api := top.Settings.API
	s := &State{top: top, m: m, tasks: o.Tasks, status: o.Status, n: o.Samples,
		kinds: map[string]string{top.Dirty.Topic: sideroute.KindDirty}, samples: map[string][]Sample{},
		mode: api.Samples, red: redact.New(api.Redact), max: api.SampleMaxBytes,
		history: NewHistory(int(HistorySpan/HistoryInterval) + 1)}
	if s.mode == "" {
		s.mode = config.SamplesFull
	}
	if s.max <= 0 {
		s.max = DefaultValueMax
	}
	for _, r := range top.Windows() {
		if lt := r.Window.Spec.LateTopic; lt != "" {
			s.kinds[lt] = sideroute.KindLate
		}
	}
	for _, r := range top.Routes {
		if a := r.Assembly; a != nil && a.Spec.IncompleteTopic != "" {
			s.kinds[a.Spec.IncompleteTopic] = sideroute.KindIncomplete
		}
		if ot := r.OverflowTopic(); ot != "" {
			s.kinds[ot] = sideroute.KindOverflow
		}
	}
	return s
}

// SetTasks changes where tasks come from (nil: none, e.g. once the
// processor stopped).
func (s *State) SetTasks(fn func() []Task, status func() (bool, string)) {
	s.mu.Lock()
	s.tasks, s.status = fn, status
	s.mu.Unlock()
}

// Sample is one side record as the view shows it.
type Sample struct {
	Seq       int64        `json:"seq"`
	Kind      string       `json:"kind"` // dirty, late or incomplete
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Key       string       `json:"key"`
	Timestamp int64        `json:"timestamp"` // epoch ms
	Reason    string       `json:"reason"`
	Lines     []string     `json:"lines"`
	Reasons   wire.Reasons `json:"reasons"`
	Value     show.Value   `json:"value"`
	// Redacted: api.samples: redacted replaced fields of Value by "***".
	Redacted  bool  `json:"redacted,omitempty"`
	Committed int64 `json:"committed"` // epoch ms
}

// Sample keeps the side records among recs (the processor's side sampler),
// as api.samples says: whole, redacted, or not at all.
func (s *State) Sample(recs []*kgo.Record) {
	if s.mode == config.SamplesOff {
		return
	}
	now := time.Now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		kind, ok := s.kinds[r.Topic]
		if !ok {
			continue
		}
		s.seq++
		rs := wire.Decode(r.Headers)
		smp := Sample{
			Seq: s.seq, Kind: kind, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Key: show.Key(r.Key, 128), Timestamp: r.Timestamp.UnixMilli(), Committed: now,
		}
		if s.mode == config.SamplesRedacted {
			s.redact(&smp, &rs, r)
		} else {
			smp.Value = show.Render(r.Value, s.max)
		}
		lines := rs.Lines()
		for i := range lines {
			lines[i] = show.Escape(lines[i])
		}
		smp.Reason, smp.Lines, smp.Reasons = show.Escape(rs.Code()), lines, rs
		smp.Reasons.Error = show.Escape(smp.Reasons.Error)
		b := append(s.samples[kind], smp)
		if len(b) > s.n {
			b = append([]Sample(nil), b[len(b)-s.n:]...)
		}
		s.samples[kind] = b
	}
}

var mask = []byte(`"` + redact.Mask + `"`)

// redact fills smp's value under api.samples: redacted: the value with
// the redact paths masked, or withheld (only its size) when it is not
// JSON; a key or an error text that quotes a masked value is withheld
// too, as is every error of a withheld value (it may quote the value).
func (s *State) redact(smp *Sample, rs *wire.Reasons, r *kgo.Record) {
	if len(r.Value) == 0 {
		smp.Value = show.Render(r.Value, s.max)
		return
	}
	out, hidden, ok := s.red.JSON(r.Value)
	if !ok {
		smp.Value = show.Value{Kind: KindWithheld, Bytes: len(r.Value)}
		if rs.Error != "" {
			rs.Error = "*** (withheld: the value is not JSON, so it could not be redacted)"
		}
		return
	}
	smp.Value, smp.Redacted = show.Render(out, s.max), len(hidden) > 0 || bytes.Count(out, mask) > bytes.Count(r.Value, mask)
	smp.Value.Bytes = len(r.Value)
	if redact.Leaks(string(r.Key), hidden) {
		smp.Key = redact.Mask
	}
	for _, f := range []*string{&rs.Error, &rs.DuplicateOf} {
		if redact.Leaks(*f, hidden) {
			*f = withheld
		}
	}
}

// View is the whole state as /ui/state serves it.
type View struct {
	ApplicationID string `json:"application_id"`
	Guarantee     string `json:"guarantee"`
	Now           int64  `json:"now"` // epoch ms
	Ready         *bool  `json:"ready,omitempty"`
	Reason        string `json:"reason,omitempty"`
	// Counters are totals of committed work: "consumed/TOPIC" (input
	// records), "route/NAME" (records the route took), "written/TOPIC"
	// (records written to an output topic), "dirty",
	// "dirty_stage/STAGE", "dirty_reason/REASON", "late/ROUTE",
	// "dropped", "redriven/TOPIC", "results/ROUTE", "commits",
	// "aborts". Rates are the same keys per second, over the last second
	// or more.
	Counters map[string]float64  `json:"counters"`
	Rates    map[string]float64  `json:"rates"`
	Routes   []RouteView         `json:"routes"`
	Tasks    []TaskView          `json:"tasks"`
	Samples  map[string][]Sample `json:"samples"`
	// SamplesMode is api.samples: full, redacted or off.
	SamplesMode string `json:"samples_mode"`
}

// RouteView is one addressable route (sideroute.Targets) and its counter.
type RouteView struct {
	sideroute.Target
	Counter string `json:"counter"` // its key in Counters
}

// Task is one of the processor's tasks as the view needs it: its status,
// shown as it marshals to JSON (a JSON object: the processor's task
// status), and its watermark, epoch ms (nil: none). The view declares it
// so that it reads tasks without importing the runtime.
type Task struct {
	Status    any
	Watermark *int64
}

// TaskView is a task with its watermark lag. It marshals as the task's
// status with a watermark_lag_ms field added at its end.
type TaskView struct {
	Task
	WatermarkLagMs *int64
}

// MarshalJSON writes the status's fields, then watermark_lag_ms when
// there is a lag: the shape of a struct embedding the status.
func (v TaskView) MarshalJSON() ([]byte, error) {
	var b []byte
	if v.Status == nil {
		b = []byte("{}")
	} else {
		var err error
		if b, err = json.Marshal(v.Status); err != nil {
			return nil, err
		}
	}
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("task status %T is not a JSON object", v.Status)
	}
	if v.WatermarkLagMs == nil {
		return b, nil
	}
	out := append([]byte{}, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"watermark_lag_ms":`...)
	out = strconv.AppendInt(out, *v.WatermarkLagMs, 10)
	return append(out, '}'), nil
}

// View returns the current state.
func (s *State) View() View {
	now := time.Now()
	cur := s.gather()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tick == nil || now.Sub(s.tickAt) >= time.Second {
		if s.tick != nil {
			secs := now.Sub(s.tickAt).Seconds()
			s.rates = map[string]float64{}
			for k, v := range cur {
				s.rates[k] = max(v-s.tick[k], 0) / secs
			}
		}
		s.tick, s.tickAt = cur, now
	}
	v := View{
		ApplicationID: s.top.Settings.ApplicationID, Guarantee: string(s.top.Settings.Guarantee), Now: now.UnixMilli(),
		Counters: cur, Rates: map[string]float64{}, Routes: []RouteView{}, Tasks: []TaskView{}, Samples: map[string][]Sample{},
		SamplesMode: s.mode,
	}
	for k, r := range s.rates {
		v.Rates[k] = r
	}
	for _, t := range sideroute.Targets(s.top) {
		// Every route's row and topic show what was written to its topic.
		v.Routes = append(v.Routes, RouteView{Target: t, Counter: "written/" + t.Topic})
	}
	if s.tasks != nil {
		for _, t := range s.tasks() {
			tv := TaskView{Task: t}
			if t.Watermark != nil {
				lag := now.UnixMilli() - *t.Watermark
				tv.WatermarkLagMs = &lag
			}
			v.Tasks = append(v.Tasks, tv)
		}
	}
	if s.status != nil {
		ok, reason := s.status()
		v.Ready, v.Reason = &ok, reason
	}
	for _, k := range []string{sideroute.KindDirty, sideroute.KindLate, sideroute.KindIncomplete} {
		v.Samples[k] = append([]Sample{}, s.samples[k]...)
	}
	return v
}

// gather reads the record counters from the registry, keyed as View's
// Counters.
func (s *State) gather() map[string]float64 {
	out := map[string]float64{"dirty": 0, "dropped": 0, "commits": 0, "aborts": 0}
	for _, r := range s.top.Routes {
		out["route/"+r.Name] = 0
		if r.Window != nil {
			out["late/"+r.Name] = 0
			out["results/"+r.Name] = 0
		}
	}
	for _, t := range s.top.InputTopics() {
		out["consumed/"+t] = 0
	}
	for _, t := range s.top.OutputTopics() {
		out["written/"+t] = 0
	}
	mfs, err := s.m.Registry.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			v := mt.GetCounter().GetValue()
			l := labels(mt)
			switch mf.GetName() {
			case metrics.NameConsumed:
				out["consumed/"+l["topic"]] += v
			case metrics.NameRouteIn:
				out["route/"+l["route"]] += v
			case metrics.NameRouteWritten:
				out["written/"+l["topic"]] += v
			case metrics.NameDirty:
				out["dirty"] += v
				out["dirty_stage/"+l["stage"]] += v
				out["dirty_reason/"+l["reason"]] += v
			case metrics.NameDropped:
				out["dropped"] += v
			case metrics.NameLate:
				out["late/"+l["route"]] += v
			case metrics.NameWindowResults:
				out["results/"+l["route"]] += v
			case metrics.NameRedriven:
				out["redriven/"+l["topic"]] += v
			case metrics.NameCommits:
				out["commits"] += v
			case metrics.NameAborts:
				out["aborts"] += v
			}
		}
	}
	return out
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
