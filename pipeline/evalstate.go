package pipeline

import (
	"sync"

	"github.com/expr-lang/expr/vm"

	"github.com/sidestream/sidestream/topology"
)

// evalState is what the evaluation of one record reuses from the one
// before: the expression VM (its stack) and the variables map, cleared
// per record. A record holds one for the whole of stage one and returns
// it; the Engine stays safe for concurrent use (evalPool).
type evalState struct {
	machine vm.VM
	env     map[string]any
	// built: env holds this record's variables (it is filled on the
	// first expression the VM runs, and not at all when none does).
	built bool
}

// evalPool hands each goroutine an evalState of its own.
type evalPool struct{ p sync.Pool }

func (p *evalPool) get() *evalState {
	if s, ok := p.p.Get().(*evalState); ok {
		return s
	}
	return &evalState{env: map[string]any{}}
}

// put returns s; nothing of a record may be read from it afterwards.
func (p *evalPool) put(s *evalState) {
	s.built = false
	clear(s.env) // the values of the record go with it, not to the next
	p.p.Put(s)
}

// vars is the record's expression variables: the decoded fields and the
// metadata variables the topology's expressions read (metas), built
// once per record. A variable no expression reads is left out: expr-lang
// reads an absent variable as nil, and none is read.
func (s *evalState) vars(metas []string, m *Meta, d *Decoded) map[string]any {
	if s.built {
		return s.env
	}
	clear(s.env)
	for k, v := range d.Fields {
		s.env[k] = v
	}
	for _, name := range metas {
		s.env[name] = metaValue(name, m, d)
	}
	s.built = true
	return s.env
}

// metaValue is metadata variable name of a record.
func metaValue(name string, m *Meta, d *Decoded) any {
	switch name {
	case topology.MetaKey:
		return string(m.Key)
	case topology.MetaTopic:
		return m.Topic
	case topology.MetaPartition:
		return int(m.Partition)
	case topology.MetaOffset:
		return int(m.Offset)
	case topology.MetaTimestamp:
		return int(m.Timestamp)
	case topology.MetaEventTime:
		return int(d.EventTime)
	case topology.MetaHeaders:
		if m.Headers == nil {
			return map[string]string{}
		}
		return m.Headers
	}
	return nil
}
