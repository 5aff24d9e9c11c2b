package pipeline

import (
	"math"

	"github.com/expr-lang/expr/vm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/processor/assembly"
	"github.com/sidestream/sidestream/topology"
	"github.com/sidestream/sidestream/wire"
)

// parts is stage one of the assembly routes for one record: every part
// whose source is one of the record's route outputs (or its input topic)
// and whose predicate holds, keyed by its ID for the repartition topic.
// Any failure makes the whole record dirty.
func (e *Engine) parts(r *kgo.Record, ev map[string]any, d *Decoded, outs []output) ([]*kgo.Record, *RecordError) {
	var recs []*kgo.Record
	var machine vm.VM
	for _, rt := range e.assemblies {
		for _, pn := range rt.Assembly.Parts {
			value := r.Value
			if pn.SourceRoute != nil {
				i := -1
				for j := range outs {
					if outs[j].Route == pn.SourceRoute {
						i = j
						break
					}
				}
				if i < 0 {
					continue
				}
				value = outs[i].Value
			} else if pn.SourceTopic != r.Topic {
				continue
			}
			if pn.When != nil {
				res, err := machine.Run(pn.When.Program, ev)
				if err != nil {
					return nil, recErr(wire.StageAssemble, wire.ReasonPartPredicate, "route %q part %q: when %q: %s", rt.Name, pn.Name, pn.When.Source, firstLine(err))
				}
				ok, isBool := res.(bool)
				if !isBool {
					return nil, recErr(wire.StageAssemble, wire.ReasonPartPredicate, "route %q part %q: when %q returned %T, not bool", rt.Name, pn.Name, pn.When.Source, res)
				}
				if !ok {
					continue
				}
			}
			res, err := machine.Run(pn.ID.Program, ev)
			if err != nil {
				return nil, recErr(wire.StageAssemble, wire.ReasonBadAssemblyID, "route %q part %q: id %q: %s", rt.Name, pn.Name, pn.ID.Source, firstLine(err))
			}
			id, err := assembly.ID(res)
			if err != nil {
				return nil, recErr(wire.StageAssemble, wire.ReasonBadAssemblyID, "route %q part %q: id %q: %v", rt.Name, pn.Name, pn.ID.Source, err)
			}
			if len(pn.Project) > 0 {
				v, rerr := project(&machine, &topology.RouteNode{Name: rt.Name + "." + pn.Name, Project: pn.Project}, ev)
				if rerr != nil {
					rerr.Stage, rerr.Reason = wire.StageAssemble, wire.ReasonPartProjection
					return nil, rerr
				}
				value = v
			}
			hs := repartitionHeaders(r, d.EventTime, math.MinInt64, false)
			hs = append(hs, kgo.RecordHeader{Key: wire.HeaderPart, Value: []byte(pn.Name)})
			recs = append(recs, &kgo.Record{Topic: rt.Assembly.RepartitionTopic, Key: []byte(id), Value: value, Headers: hs, Timestamp: r.Timestamp})
		}
	}
	return recs, nil
}
