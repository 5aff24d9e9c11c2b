package wire

import (
	"strings"
	"testing"
)

// TestHeaderNames pins the header names: they are on topics already
// written, so a changed name is a break for every reader of old records.
func TestHeaderNames(t *testing.T) {
	for got, want := range map[string]string{
		HeaderError: "sidestream.error", HeaderReason: "sidestream.reason", HeaderStage: "sidestream.stage",
		HeaderTopic: "sidestream.source.topic", HeaderPartition: "sidestream.source.partition",
		HeaderOffset: "sidestream.source.offset", HeaderTimestamp: "sidestream.source.timestamp",
		HeaderAppID: "sidestream.application_id", HeaderTruncated: "sidestream.truncated.original_bytes",
		HeaderEventTime: "sidestream.event_time", HeaderSourceKey: "sidestream.source.key",
		HeaderLateWM: "sidestream.late.watermark", HeaderLateWins: "sidestream.late.windows",
		HeaderLateBy: "sidestream.late.by_ms", HeaderLateRoute: "sidestream.late.route",
		HeaderRevision: "sidestream.window.revision", HeaderFinal: "sidestream.window.final",
		HeaderFields: "sidestream.fields", HeaderRepartition: "sidestream.r",
		HeaderSourceMax: "sidestream.source.max_event_time", HeaderMark: "sidestream.watermark.mark",
		HeaderPart: "sidestream.assembly.part", HeaderAssemblyRoute: "sidestream.assembly.route",
		HeaderAssemblyParts: "sidestream.assembly.parts", HeaderMissing: "sidestream.assembly.missing",
		HeaderComplete: "sidestream.assembly.complete", HeaderDuplicateOf: "sidestream.assembly.completed_id",
		HeaderOverflowRoute: "sidestream.overflow.route", HeaderOverflowLimit: "sidestream.overflow.limit",
		HeaderOverflowMax: "sidestream.overflow.max", HeaderOverflowSize: "sidestream.overflow.size",
		HeaderEvicted: "sidestream.window.evicted", HeaderAssemblyEvicted: "sidestream.assembly.evicted",
		HeaderRedriveOrigin: "sidestream.redrive.origin", HeaderRedriveRun: "sidestream.redrive.run",
		HeaderRedriveReason: "sidestream.redrive.reason", HeaderRedriveCount: "sidestream.redrive.count",
		HeaderRedriveAt: "sidestream.redrive.at",
	} {
		if got != want {
			t.Errorf("header %q, want %q", got, want)
		}
		if !strings.HasPrefix(got, HeaderPrefix) {
			t.Errorf("header %q lacks the prefix %q", got, HeaderPrefix)
		}
	}
}

// TestCodesDistinct: stage, reason and loss codes are metric label values
// and header values; two constants of one kind never share a value.
func TestCodesDistinct(t *testing.T) {
	for kind, codes := range map[string][]string{
		"stage": {StageDecode, StageSchema, StageEventTime, StageRoute, StageProduce, StageWindow, StageAssemble},
		"reason": {ReasonNullValue, ReasonEmptyValue, ReasonInvalidUTF8, ReasonInvalidJSON, ReasonNotObject, ReasonSchema,
			ReasonMissingTime, ReasonBadTime, ReasonTimeAhead, ReasonExprError, ReasonPredicateType, ReasonKeyError,
			ReasonProjectError, ReasonTooLarge, ReasonUnknownTopic, ReasonUnsupportedFmt, ReasonConnectType, ReasonAvroEncode, ReasonBadMark,
			ReasonTopicInvalid, ReasonTopicNotAllowed, ReasonTopicMissing, ReasonTopicCreateRefused,
			ReasonAggregate, ReasonStateError, ReasonNotPartitioned, ReasonBadFields, ReasonEventTimeRange, ReasonValueCount, ReasonValueType,
			ReasonNonFinite, ReasonAggOverflow, ReasonBadAssemblyID, ReasonUnknownPart, ReasonBadPartValue,
			ReasonPartPredicate, ReasonPartProjection, ReasonNotPartitionedByID,
			ReasonNotRegistryFramed, ReasonUnknownSchemaID, ReasonAvroDecode, ReasonProtobufDecode,
			ReasonJSONSchemaDecode, ReasonJSONSchemaInvalid},
		"loss": {LossRecordsDeleted, LossChangelogEmpty, LossChangelogMissing, LossCheckpointPastEnd, LossCheckpointBelowStart},
	} {
		seen := map[string]bool{}
		for _, c := range codes {
			if c == "" || seen[c] || strings.ContainsAny(c, " .") {
				t.Errorf("%s code %q: empty, repeated or not a bare label", kind, c)
			}
			seen[c] = true
		}
	}
}
