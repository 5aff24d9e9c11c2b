package window

import (
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/sidestream/sidestream/internal/aggfn"
	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

// Kind is the window kind.
type Kind uint8

// Window kinds.
const (
	Tumbling Kind = iota + 1 // fixed size, no overlap: Size
	Hopping                  // fixed size, overlapping: Size, Advance
	Session                  // activity sessions closed by a Gap of inactivity
)

func (k Kind) String() string {
	switch k {
	case Tumbling:
		return "tumbling"
	case Hopping:
		return "hopping"
	case Session:
		return "session"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// EmitMode selects which results a window emits.
type EmitMode uint8

// Emit modes.
const (
	// EmitUpdate emits the first result when the window fires, an update
	// for each record applied during grace, and a final marker at purge.
	EmitUpdate EmitMode = iota
	// EmitFinal emits one result per window, when it is purged.
	EmitFinal
)

func (m EmitMode) String() string {
	switch m {
	case EmitUpdate:
		return "update"
	case EmitFinal:
		return "final"
	}
	return fmt.Sprintf("emit(%d)", uint8(m))
}

// AggKind is an aggregation function.
type AggKind uint8

// Aggregations. Each receives one value per record (evaluated by the
// caller); a nil value is skipped by every aggregation.
const (
	// Count counts records whose value is not nil (any type).
	Count AggKind = iota + 1
	// Sum adds numbers. Integers stay int64 while the sum fits, then it
	// becomes float64; any float input makes it float64. null when empty.
	Sum
	// Min is the smallest number (ties keep the earlier arrival). null when empty.
	Min
	// Max is the largest number (ties keep the earlier arrival). null when empty.
	Max
	// Avg is sum / count as float64. null when empty.
	Avg
	// First is the value with the smallest event time; ties go to the
	// earlier arrival. Values must be scalars (bool, string, number).
	First
	// Last is the value with the largest event time; ties go to the later
	// arrival. Values must be scalars.
	Last
	// DistinctCount counts distinct scalar values; numbers compare by
	// value (1 and 1.0 are the same), strings and booleans by equality.
	// Its state grows with the number of distinct values in the window.
	DistinctCount
)

// aggNames are the kinds' names: aggfn.Names in AggKind order (Count is
// 1), the list the config model checks topologies against.
var aggNames = func() map[AggKind]string {
	m := make(map[AggKind]string, len(aggfn.Names))
	for i, n := range aggfn.Names {
		m[AggKind(i+1)] = n
	}
	return m
}()

func (a AggKind) String() string {
	if s, ok := aggNames[a]; ok {
		return s
	}
	return fmt.Sprintf("agg(%d)", uint8(a))
}

// ParseAggKind returns the AggKind of a name as used in configs.
func ParseAggKind(name string) (AggKind, error) {
	for k, n := range aggNames {
		if n == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown aggregation %q", name)
}

// Aggregation is one named aggregate of a window.
type Aggregation struct {
	Name string
	Kind AggKind
}

// Limits. Event times outside [MinEventTime, MaxEventTime] are rejected so
// that no window arithmetic can overflow; durations must be whole
// milliseconds.
const (
	MaxEventTime int64 = 1 << 53 // ≈ year 287,396
	MinEventTime int64 = -MaxEventTime
	// MaxWindowsPerRecord bounds Size/Advance of hopping windows.
	MaxWindowsPerRecord = 1000
	// maxWatermark caps AdvanceWatermark so LateBy never overflows.
	maxWatermark int64 = 1 << 61
)

// Spec configures one window operator.
type Spec struct {
	Kind Kind
	// Size of tumbling and hopping windows.
	Size time.Duration
	// Advance of hopping windows: 0 < Advance <= Size, and Size/Advance
	// (rounded up) at most MaxWindowsPerRecord. Windows start at multiples
	// of Advance (tumbling: of Size) since the epoch.
	Advance time.Duration
	// Gap of session windows.
	Gap time.Duration
	// MaxOutOfOrderness is subtracted from the max event time to get the
	// watermark. Default 0.
	MaxOutOfOrderness time.Duration
	// Grace is how long after its end (in watermark time) a window still
	// accepts records. Default 0.
	Grace time.Duration
	// Emit is the emit mode. Default EmitUpdate.
	Emit EmitMode
	// Aggregations, at least one, unique names. Process takes one value
	// per aggregation, in this order.
	Aggregations []Aggregation
	// Limits bound the task's state (default: none). They are not part
	// of the spec's fingerprint: changing them keeps the stored state.
	// They gate only the admission of new windows: a record for windows
	// that exist always updates them. statelimit.Route refuses a record
	// that would open one more (it changes no window but still moves the
	// watermark, and the caller writes it to the overflow route);
	// statelimit.Evict emits the windows whose next timer is earliest as
	// final results with Evicted set, and purges them. Every decision is
	// made in record order from the stored state alone, so a replay or a
	// restore decides the same way.
	Limits statelimit.Limits
	// Described is the caller's canonical description of what the state
	// depends on (stage two: the plan's StateSpec), kept in the meta. When
	// the store's meta holds one too, it decides whether the state is
	// readable (equal bytes); else the fingerprint of the spec does. Nil:
	// none is stored, the fingerprint decides.
	Described []byte
}

// ErrSpec is wrapped by every Spec validation error.
var ErrSpec = errors.New("invalid window spec")

func ms(name string, d time.Duration, positive bool) (int64, error) {
	if d < 0 || (positive && d == 0) {
		return 0, fmt.Errorf("%w: %s %v must be %s", ErrSpec, name, d, map[bool]string{true: "> 0", false: ">= 0"}[positive])
	}
	if d%time.Millisecond != 0 {
		return 0, fmt.Errorf("%w: %s %v is not a whole number of milliseconds", ErrSpec, name, d)
	}
	return d.Milliseconds(), nil
}

// Validate checks the spec.
func (s Spec) Validate() error {
	_, err := s.compile()
	return err
}

// params is a validated Spec in milliseconds.
type params struct {
	kind               Kind
	size, advance, gap int64
	ooo, grace         int64
	emit               EmitMode
	aggs               []Aggregation
	fingerprint        uint64
	lim                statelimit.Limits
	described          []byte
}

func (s Spec) compile() (params, error) {
	p := params{kind: s.Kind, emit: s.Emit}
	var err error
	switch s.Kind {
	case Tumbling:
		if p.size, err = ms("size", s.Size, true); err != nil {
			return p, err
		}
		if s.Advance != 0 && s.Advance != s.Size {
			return p, fmt.Errorf("%w: tumbling windows take no advance (use hopping)", ErrSpec)
		}
		p.advance = p.size
	case Hopping:
		if p.size, err = ms("size", s.Size, true); err != nil {
			return p, err
		}
		if p.advance, err = ms("advance", s.Advance, true); err != nil {
			return p, err
		}
		if p.advance > p.size {
			return p, fmt.Errorf("%w: advance %v is larger than size %v", ErrSpec, s.Advance, s.Size)
		}
		if (p.size+p.advance-1)/p.advance > MaxWindowsPerRecord {
			return p, fmt.Errorf("%w: size/advance puts each record in more than %d windows", ErrSpec, MaxWindowsPerRecord)
		}
	case Session:
		if p.gap, err = ms("gap", s.Gap, true); err != nil {
			return p, err
		}
	default:
		return p, fmt.Errorf("%w: unknown kind %v", ErrSpec, s.Kind)
	}
	if s.Kind != Session && s.Gap != 0 {
		return p, fmt.Errorf("%w: gap is only for session windows", ErrSpec)
	}
	if s.Kind == Session && (s.Size != 0 || s.Advance != 0) {
		return p, fmt.Errorf("%w: session windows take a gap, not size or advance", ErrSpec)
	}
	if p.ooo, err = ms("max_out_of_orderness", s.MaxOutOfOrderness, false); err != nil {
		return p, err
	}
	if p.grace, err = ms("grace", s.Grace, false); err != nil {
		return p, err
	}
	if s.Emit != EmitUpdate && s.Emit != EmitFinal {
		return p, fmt.Errorf("%w: unknown emit mode %v", ErrSpec, s.Emit)
	}
	if len(s.Aggregations) == 0 {
		return p, fmt.Errorf("%w: no aggregations", ErrSpec)
	}
	seen := map[string]bool{}
	for i, a := range s.Aggregations {
		if a.Name == "" {
			return p, fmt.Errorf("%w: aggregation %d has no name", ErrSpec, i)
		}
		if seen[a.Name] {
			return p, fmt.Errorf("%w: aggregation name %q used twice", ErrSpec, a.Name)
		}
		seen[a.Name] = true
		if _, ok := aggNames[a.Kind]; !ok {
			return p, fmt.Errorf("%w: aggregation %q: unknown kind %v", ErrSpec, a.Name, a.Kind)
		}
	}
	p.aggs = append([]Aggregation(nil), s.Aggregations...)
	perRecord := int64(1)
	if p.kind == Hopping {
		perRecord = (p.size + p.advance - 1) / p.advance
	}
	if err := validateLimits(s.Limits, perRecord); err != nil {
		return p, err
	}
	p.lim = s.Limits
	p.described = s.Described
	h := fnv.New64a()
	fmt.Fprintf(h, "v1|%d|%d|%d|%d|%d|%d|%d", p.kind, p.size, p.advance, p.gap, p.ooo, p.grace, p.emit)
	for _, a := range p.aggs {
		fmt.Fprintf(h, "|%d:%q", a.Kind, a.Name)
	}
	p.fingerprint = h.Sum64()
	return p, nil
}
