package observe

import (
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// wire.Reasons of sidestream_txn_aborts_total.
const (
	AbortCommitError   = "commit_error"
	AbortAuthorization = "authorization"
	AbortProduceError  = "produce_error"
	AbortRebalance     = "rebalance"
	// AbortRegistryUnavailable: a registry-backed input's batch met a
	// schema registry outage (also counted under at-least-once, where
	// the batch is given up uncommitted, as AbortAuthorization and
	// AbortProduceError are for a produce failure).
	AbortRegistryUnavailable = "registry_unavailable"
	// AbortRouteHeld: a batch met a route whose state was written with
	// another spec; it is processed again with the route held (counted
	// once per held route, under both guarantees).
	AbortRouteHeld = "route_held"
)

// dirtyPairs are the stage and reason pairs records can reach the dirty
// route with, by the part of the pipeline that sends them (a test checks
// every pair the code uses is here).
var (
	dirtyPairs = [][2]string{
		{wire.StageDecode, wire.ReasonNullValue}, {wire.StageDecode, wire.ReasonEmptyValue}, {wire.StageDecode, wire.ReasonInvalidUTF8},
		{wire.StageDecode, wire.ReasonInvalidJSON}, {wire.StageDecode, wire.ReasonNotObject}, {wire.StageDecode, wire.ReasonUnknownTopic},
		{wire.StageSchema, wire.ReasonSchema},
		{wire.StageEventTime, wire.ReasonMissingTime}, {wire.StageEventTime, wire.ReasonBadTime}, {wire.StageEventTime, wire.ReasonTimeAhead},
		{wire.StageRoute, wire.ReasonExprError}, {wire.StageRoute, wire.ReasonPredicateType}, {wire.StageRoute, wire.ReasonKeyError},
		{wire.StageRoute, wire.ReasonProjectError}, {wire.StageRoute, wire.ReasonConnectType}, {wire.StageRoute, wire.ReasonAvroEncode},
		{wire.StageProduce, wire.ReasonTooLarge},
	}
	windowDirtyPairs = [][2]string{
		{wire.StageWindow, wire.ReasonAggregate}, {wire.StageWindow, wire.ReasonBadMark}, {wire.StageWindow, wire.ReasonBadTime},
		{wire.StageWindow, wire.ReasonConnectType}, {wire.StageWindow, wire.ReasonAvroEncode}, {wire.StageWindow, wire.ReasonInvalidJSON},
		{wire.StageWindow, wire.ReasonBadFields}, {wire.StageWindow, wire.ReasonNotPartitioned}, {wire.StageWindow, wire.ReasonTooLarge},
	}
	assemblyDirtyPairs = [][2]string{
		{wire.StageAssemble, wire.ReasonBadAssemblyID}, {wire.StageAssemble, wire.ReasonBadPartValue}, {wire.StageAssemble, wire.ReasonBadTime},
		{wire.StageAssemble, wire.ReasonNotPartitionedByID}, {wire.StageAssemble, wire.ReasonPartPredicate}, {wire.StageAssemble, wire.ReasonPartProjection},
		{wire.StageAssemble, wire.ReasonTooLarge}, {wire.StageAssemble, wire.ReasonUnknownPart},
	}
	// computedDirtyPairs: routes whose topic is computed per record.
	computedDirtyPairs = [][2]string{
		{wire.StageRoute, wire.ReasonTopicInvalid}, {wire.StageRoute, wire.ReasonTopicNotAllowed},
		{wire.StageRoute, wire.ReasonTopicMissing}, {wire.StageRoute, wire.ReasonTopicCreateRefused},
	}
	// registryDirtyPairs: the registry-backed inputs' (avro, protobuf,
	// json_schema; package registry's RecordError).
	registryDirtyPairs = [][2]string{
		{wire.StageDecode, wire.ReasonNotRegistryFramed}, {wire.StageDecode, wire.ReasonUnknownSchemaID},
		{wire.StageDecode, wire.ReasonAvroDecode}, {wire.StageDecode, wire.ReasonProtobufDecode},
		{wire.StageDecode, wire.ReasonJSONSchemaDecode}, {wire.StageSchema, wire.ReasonJSONSchemaInvalid},
	}
	windowKinds    = []string{"first", "update", "final", "retract", "evicted", "dirty"}
	lossReasons    = []string{wire.LossRecordsDeleted, wire.LossChangelogEmpty, wire.LossChangelogMissing, wire.LossCheckpointPastEnd, wire.LossCheckpointBelowStart}
	partOutcomes   = []string{metrics.PartNew, metrics.PartDuplicate, metrics.PartCompleted}
	assemblyResult = []string{metrics.ResultCompleted, metrics.ResultExpired, metrics.ResultTooLarge, metrics.ResultEvicted}
)

// Series lists every counter series the topology can produce, for
// metrics.Preset.
func Series(top *plan.Plan) metrics.Series {
	var s metrics.Series
	rep, _ := top.InternalTopics()
	s.Consumed = top.InputTopics()
	s.Repartitioned = rep
	writers := top.Writers()
	for _, t := range top.OutputTopics() {
		s.Written = append(s.Written, [2]string{writers[t], t})
	}
	s.Redriven = top.InputTopics()
	s.Authz = top.OutputTopics()
	s.Dirty = append(s.Dirty, dirtyPairs...)
	s.Dropped = []string{wire.DropNoRoute}
	if top.Settings.Guarantee == plan.ExactlyOnce {
		s.Aborts = []string{AbortCommitError, AbortAuthorization, AbortProduceError, AbortRebalance}
		s.Stranded = []string{"commit", "abort"}
	} else {
		// An at-least-once interval a produce failure left uncommitted.
		s.Aborts = []string{AbortAuthorization, AbortProduceError}
	}
	if len(top.Windows())+len(top.Assemblies()) > 0 {
		s.Aborts = append(s.Aborts, AbortRouteHeld)
	}
	if registryInputs(top) {
		s.Dirty = append(s.Dirty, registryDirtyPairs...)
		s.Aborts = append(s.Aborts, AbortRegistryUnavailable)
	}
	action := "fail"
	if top.Settings.State.StartEmptyOnLoss() {
		action = "start_empty"
	}
	statefulRoute := func(r *plan.RouteNode) {
		s.Changelog = append(s.Changelog, r.Name)
		for _, why := range lossReasons {
			s.ChangelogLoss = append(s.ChangelogLoss, [3]string{r.Name, why, action})
		}
		if l := r.StateLimits(); l != nil && (l.MaxEntries > 0 || l.MaxBytes > 0) {
			policy := metrics.PolicyRoute
			if l.OnOverflow == plan.OverflowEvict {
				policy = metrics.PolicyEvict
			}
			s.StateOverflow = append(s.StateOverflow, [2]string{r.Name, policy})
		}
	}
	windows, assemblies := false, false
	for _, r := range top.Routes {
		s.Routes = append(s.Routes, r.Name)
		switch {
		case r.Window != nil:
			windows = true
			s.Aggregated = append(s.Aggregated, r.Name)
			for _, k := range windowKinds {
				s.WindowResults = append(s.WindowResults, [2]string{r.Name, k})
			}
			statefulRoute(r)
		case r.Assembly != nil:
			assemblies = true
			for _, o := range partOutcomes {
				s.AssemblyParts = append(s.AssemblyParts, [2]string{r.Name, o})
			}
			for _, res := range assemblyResult {
				s.Assemblies = append(s.Assemblies, [2]string{r.Name, res})
			}
			statefulRoute(r)
		}
	}
	if windows {
		s.Dirty = append(s.Dirty, windowDirtyPairs...)
	}
	if len(top.ComputedRoutes()) > 0 {
		s.Dirty = append(s.Dirty, computedDirtyPairs...)
	}
	if assemblies {
		s.Dirty = append(s.Dirty, assemblyDirtyPairs...)
	}
	return s
}

func registryInputs(top *plan.Plan) bool {
	for _, in := range top.Inputs {
		if plan.RegistryFormat(in.Format) {
			return true
		}
	}
	return false
}
