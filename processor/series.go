package processor

import (
	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/topology"
)

// Reasons of sidestream_txn_aborts_total.
const (
	AbortCommitError   = "commit_error"
	AbortAuthorization = "authorization"
	AbortProduceError  = "produce_error"
	AbortRebalance     = "rebalance"
)

// dirtyPairs are the stage and reason pairs records can reach the dirty
// route with, by the part of the pipeline that sends them (a test checks
// every pair the code uses is here).
var (
	dirtyPairs = [][2]string{
		{StageDecode, ReasonNullValue}, {StageDecode, ReasonEmptyValue}, {StageDecode, ReasonInvalidUTF8},
		{StageDecode, ReasonInvalidJSON}, {StageDecode, ReasonNotObject}, {StageDecode, ReasonUnknownTopic},
		{StageSchema, ReasonSchema},
		{StageEventTime, ReasonMissingTime}, {StageEventTime, ReasonBadTime}, {StageEventTime, ReasonTimeAhead},
		{StageRoute, ReasonExprError}, {StageRoute, ReasonPredicateType}, {StageRoute, ReasonKeyError},
		{StageRoute, ReasonProjectError}, {StageRoute, ReasonConnectType},
		{StageProduce, ReasonTooLarge},
	}
	windowDirtyPairs = [][2]string{
		{StageWindow, ReasonAggregate}, {StageWindow, ReasonBadMark}, {StageWindow, ReasonBadTime},
		{StageWindow, ReasonConnectType}, {StageWindow, ReasonInvalidJSON}, {StageWindow, ReasonNotPartitioned},
	}
	assemblyDirtyPairs = [][2]string{
		{StageAssemble, ReasonBadAssemblyID}, {StageAssemble, ReasonBadPartValue}, {StageAssemble, ReasonBadTime},
		{StageAssemble, ReasonNotPartitionedByID}, {StageAssemble, ReasonPartPredicate}, {StageAssemble, ReasonPartProjection},
		{StageAssemble, ReasonTooLarge}, {StageAssemble, ReasonUnknownPart},
	}
	windowKinds    = []string{"first", "update", "final", "retract", "evicted", "dirty"}
	lossReasons    = []string{LossRecordsDeleted, LossChangelogEmpty, LossChangelogMissing, LossCheckpointPastEnd, LossCheckpointBelowStart}
	partOutcomes   = []string{metrics.PartNew, metrics.PartDuplicate, metrics.PartCompleted}
	assemblyResult = []string{metrics.ResultCompleted, metrics.ResultExpired, metrics.ResultTooLarge, metrics.ResultEvicted}
)

// series lists every counter series the topology can produce, for
// metrics.Preset.
func series(top *topology.Topology) metrics.Series {
	var s metrics.Series
	rep, _ := top.InternalTopics()
	s.Consumed = append(top.InputTopics(), rep...)
	s.Redriven = top.InputTopics()
	s.Authz = top.OutputTopics()
	s.Dirty = append(s.Dirty, dirtyPairs...)
	s.Dropped = []string{DropReasonNoRoute}
	if top.Config.Guarantee == topology.ExactlyOnce {
		s.Aborts = []string{AbortCommitError, AbortAuthorization, AbortProduceError, AbortRebalance}
		s.Stranded = []string{"commit", "abort"}
	}
	action := "fail"
	if top.Config.State.StartEmptyOnLoss() {
		action = "start_empty"
	}
	stateful := func(r *topology.RouteNode) {
		s.Changelog = append(s.Changelog, r.Name)
		for _, why := range lossReasons {
			s.ChangelogLoss = append(s.ChangelogLoss, [3]string{r.Name, why, action})
		}
		if l := r.StateLimits(); l != nil && (l.MaxEntries > 0 || l.MaxBytes > 0) {
			policy := metrics.PolicyRoute
			if l.OnOverflow == topology.OverflowEvict {
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
			stateful(r)
		case r.Assembly != nil:
			assemblies = true
			for _, o := range partOutcomes {
				s.AssemblyParts = append(s.AssemblyParts, [2]string{r.Name, o})
			}
			for _, res := range assemblyResult {
				s.Assemblies = append(s.Assemblies, [2]string{r.Name, res})
			}
			stateful(r)
		}
	}
	if windows {
		s.Dirty = append(s.Dirty, windowDirtyPairs...)
	}
	if assemblies {
		s.Dirty = append(s.Dirty, assemblyDirtyPairs...)
	}
	return s
}
