package stageone

import (
	"math"

	gojson "github.com/goccy/go-json"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// parts is stage one of the assembly routes for one record: every part
// whose source is one of the record's route outputs (or its input topic)
// and whose predicate holds, keyed by its ID for the repartition topic.
// Any failure makes the whole record dirty.
func (e *Engine) parts(st *evalState, r *kgo.Record, ev map[string]any, d *Decoded, outs []output) ([]*kgo.Record, *RecordError) {
	var recs []*kgo.Record
	machine := &st.machine // the routes are done with it
	var js []byte          // the registry-backed value as JSON, rendered once
	for _, rt := range e.assemblies {
		for _, pn := range rt.Assembly.Parts {
			value, original, ok := partSource(r, pn, outs)
			if !ok {
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
			switch {
			case len(pn.Project) > 0:
				v, rerr := project(machine, &plan.RouteNode{Name: rt.Name + "." + pn.Name, Project: pn.Project}, ev)
				if rerr != nil {
					rerr.Stage, rerr.Reason = wire.StageAssemble, wire.ReasonPartProjection
					return nil, rerr
				}
				value = v
			case original && d.whole != nil:
				if js == nil {
					if js, err = gojson.Marshal(d.whole); err != nil {
						return nil, recErr(wire.StageAssemble, wire.ReasonBadPartValue, "route %q part %q: the decoded value has no JSON form: %v", rt.Name, pn.Name, err)
					}
				}
				value = js
			}
			hs, _ := e.repartitionHeaders(st, r, d.EventTime, math.MinInt64, false, 0, nil)
			hs = append(hs, kgo.RecordHeader{Key: wire.HeaderPart, Value: append(st.carve(len(pn.Name)), pn.Name...)})
			recs = append(recs, &kgo.Record{Topic: rt.Assembly.RepartitionTopic, Key: append(st.carve(len(id)), id...), Value: value, Headers: hs, Timestamp: r.Timestamp})
		}
	}
	return recs, nil
}

// partSource is the value part pn takes from record r: its source
// route's output (ok false when r did not take that route) or r's value
// (ok false when r is not of its source topic). original says the value
// is the input's own bytes, which for a registry-backed input are Avro or
// Protobuf: the part nests the decoded value's JSON instead (parts).
func partSource(r *kgo.Record, pn *plan.PartNode, outs []output) (value []byte, original, ok bool) {
	if pn.SourceRoute == nil {
		return r.Value, true, pn.SourceTopic == r.Topic
	}
	for j := range outs {
		if outs[j].Route == pn.SourceRoute {
			src := pn.SourceRoute
			return outs[j].Value, src.Connect == nil && src.Value != plan.ValueProjection, true
		}
	}
	return nil, false, false
}
