package stagetwo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/wire"
)

// ChangelogLossError reports that a changelog partition no longer holds
// the state its task must restore. Under state.on_changelog_loss: fail
// (the default) the task does not process; the error names the topic,
// the partition and the offsets that show the loss.
type ChangelogLossError struct {
	Route     string
	Topic     string
	Partition int32
	Reason    string
	Detail    string
}

func (e *ChangelogLossError) Error() string {
	return fmt.Sprintf("changelog %s partition %d (route %q) lost state: %s; the task does not process "+
		"(set state.on_changelog_loss: start_empty to start it with what the changelog still holds)",
		e.Topic, e.Partition, e.Route, e.Detail)
}

// LossMarkKey is the changelog key a task writes when state.on_changelog_loss:
// start_empty let it start without lost state. Its value is the log start
// offset the loss was accepted at, so the next restore does not report the
// same deletion again, while a later one (a higher log start) is reported.
// The 0xff prefix is outside every operator's key space.
var LossMarkKey = []byte("\xffsidestream.changelog_loss_accepted")

// NoMark is the accepted offset of a partition without a mark.
const NoMark = int64(-1)

func LossMark(key, value []byte) (int64, bool) {
	if !bytes.Equal(key, LossMarkKey) {
		return 0, false
	}
	v, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil {
		return NoMark, true
	}
	return v, true
}

// writeLossMark records in st (a change, written with the next commit)
// that the loss up to logStart was accepted.
func writeLossMark(st changelog.Store, logStart int64) error {
	return st.Set(LossMarkKey, []byte(strconv.FormatInt(logStart, 10)))
}

// ChangelogLoss reports a loss: counted, and logged at ERROR (fail) or WARN
// (start_empty). It returns the error to stop the task with, or nil when
// the configuration lets it start with what is left.
func (s *Stage) ChangelogLoss(route, topic string, part int32, reason, detail string) error {
	le := &ChangelogLossError{Route: route, Topic: topic, Partition: part, Reason: reason, Detail: detail}
	args := []any{"route", route, "topic", topic, "partition", part, "reason", reason, "detail", detail}
	if s.top.Settings.State.StartEmptyOnLoss() {
		s.m.ChangelogLoss.WithLabelValues(route, reason, "start_empty").Inc()
		s.log.Warn("changelog lost state; starting the task with what it still holds (state.on_changelog_loss: start_empty)", args...)
		return nil
	}
	s.m.ChangelogLoss.WithLabelValues(route, reason, "fail").Inc()
	s.rt.SetLost(s.RepartitionOf(topic), part, le.Error())
	s.log.Error("changelog lost state; the task does not process", args...)
	return le
}

// StateWitness says why a changelog partition must hold state, "" when
// nothing does: for a route with a repartition topic, the group's
// committed offset on the same partition of it (stage two processed
// records, and wrote every state change in the same transaction); for a
// direct route, the committed metadata of its input partitions of the
// same number (a task of it held state there; see sourceTracker).
func (s *Stage) StateWitness(ctx context.Context, changelogTopic string, part int32) (string, error) {
	rep := s.RepartitionOf(changelogTopic)
	if rep == "" {
		return "", nil
	}
	if s.IsDirect(rep) {
		if !s.rt.Holds(rep, part) {
			return "", nil
		}
		return fmt.Sprintf("the offsets group %s committed on input partition %d record that route %s held state in it",
			s.top.Settings.ApplicationID, part, s.RouteOf(rep)), nil
	}
	or, err := s.rt.Admin().FetchOffsets(ctx, s.top.Settings.ApplicationID)
	if err != nil {
		return "", fmt.Errorf("fetch committed offsets of group %s: %w", s.top.Settings.ApplicationID, err)
	}
	o, ok := or.Lookup(rep, part)
	if !ok || o.Err != nil || o.At <= 0 {
		return "", nil
	}
	return fmt.Sprintf("group %s has committed offset %d on %s partition %d, whose state it held",
		s.top.Settings.ApplicationID, o.At, rep, part), nil
}

// RepartitionOf is the repartition topic whose state a changelog holds.
func (s *Stage) RepartitionOf(changelogTopic string) string {
	for rep, r := range s.ws.routes {
		if r.rt.Window.ChangelogTopic == changelogTopic {
			return rep
		}
	}
	for rep, r := range s.as.routes {
		if r.rt.Assembly.ChangelogTopic == changelogTopic {
			return rep
		}
	}
	return ""
}

// MissingChangelog checks a changelog partition that does not exist: a
// loss when something witnesses the state written there (StateWitness),
// otherwise a topic not created yet.
func (s *Stage) MissingChangelog(ctx context.Context, route, topic string, part int32, listErr error) error {
	if !errors.Is(listErr, kerr.UnknownTopicOrPartition) && !errors.Is(listErr, kerr.UnknownTopicID) {
		return nil
	}
	w, err := s.StateWitness(ctx, topic, part)
	if err != nil || w == "" {
		return nil
	}
	return s.ChangelogLoss(route, topic, part, wire.LossChangelogMissing, "the topic does not exist, but "+w)
}
