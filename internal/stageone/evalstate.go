package stageone

import (
	"sync"

	"github.com/sidestream/sidestream/internal/plan"

	"github.com/expr-lang/expr/vm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// evalState is one record's evaluation in stage one, and what it
// reuses from the record before: the decoded fields (vals), the
// expression VM (its stack), the variables map, the outputs. A record
// holds one from decode to its counts and returns it; the Engine stays
// safe for concurrent use (evalPool).
type evalState struct {
	machine vm.VM
	env     map[string]any
	// built: env holds this record's variables (it is filled on the
	// first expression the VM runs, and not at all when none does).
	built bool
	dec   Decoded  // the JSON decode's target; dec.vals by field number
	outs  []output // the routes' outputs
	// topicBuf is where a computed topic's name is appended
	// (computeTopic), to be looked up before it is a string.
	topicBuf []byte
	// recSlab and ptrSlab are what is left of the slabs output records
	// are carved from (newRecords); they outlive the record.
	recSlab []kgo.Record
	ptrSlab []*kgo.Record
	// byteSlab and hdrSlab are the same for the bytes and header slices
	// of output records (keys, the stage-one envelope): carve, headers.
	byteSlab []byte
	hdrSlab  []kgo.RecordHeader

	// marks are what the record's lookups answered that its outputs say
	// (the _lookups variable; wire.HeaderLookupTooOld).
	marks plan.LookupMarks

	// The record: its router, Kafka side, value and decoded fields.
	rt    *router
	m     Meta
	value []byte
	d     *Decoded
}

// evalPool hands each goroutine an evalState of its own.
type evalPool struct {
	p      sync.Pool
	fields int // len(plan.Fields)
}

func (p *evalPool) get() *evalState {
	if s, ok := p.p.Get().(*evalState); ok {
		return s
	}
	return &evalState{env: map[string]any{}, dec: Decoded{vals: make([]any, p.fields)}}
}

// put returns s; nothing of its record may be read from it afterwards.
// What the record referenced is let go, not kept for the next.
func (p *evalPool) put(s *evalState) {
	s.built = false
	clear(s.env)
	clear(s.dec.vals)
	s.dec.EventTime, s.dec.Clamped = 0, false
	clear(s.outs)
	s.outs = s.outs[:0]
	s.marks.Reset()
	s.rt, s.m, s.value, s.d = nil, Meta{}, nil, nil
	p.p.Put(s)
}

// vars is the record's expression variables: the decoded fields and the
// metadata variables the topology's expressions read, built once per
// record. A variable no expression reads is left out, and so is an
// absent or null field: expr-lang reads an absent variable as nil.
func (s *evalState) vars() map[string]any {
	if s.built {
		return s.env
	}
	if s.d.vals != nil {
		for i, v := range s.d.vals {
			if v != nil {
				s.env[s.rt.fields[i]] = v
			}
		}
	} else {
		for k, v := range s.d.Fields {
			s.env[k] = v
		}
	}
	for _, name := range s.rt.metas {
		if name == plan.MetaLookups {
			s.env[name] = &s.marks
			continue
		}
		s.env[name] = metaValue(name, &s.m, s.d)
	}
	s.built = true
	return s.env
}

// eval is expression x on the record: its fast form when it has one
// and decides (on a JSON input's fields), else the VM.
func (s *evalState) eval(x *plan.Expr, fast plan.Fast) (any, error) {
	if fast != nil && s.d.vals != nil {
		if v, ok := fast(s.d.vals); ok {
			return v, nil
		}
	}
	return s.machine.Run(x.Program, s.vars())
}

// metaValue is metadata variable name of a record.
func metaValue(name string, m *Meta, d *Decoded) any {
	switch name {
	case plan.MetaKey:
		return string(m.Key)
	case plan.MetaTopic:
		return m.Topic
	case plan.MetaPartition:
		return int(m.Partition)
	case plan.MetaOffset:
		return int(m.Offset)
	case plan.MetaTimestamp:
		return int(m.Timestamp)
	case plan.MetaEventTime:
		return int(d.EventTime)
	case plan.MetaHeaders:
		if m.Headers == nil {
			return map[string]string{}
		}
		return m.Headers
	}
	return nil
}
