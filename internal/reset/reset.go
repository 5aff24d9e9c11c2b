// Package reset resets an application: what Kafka Streams' application
// reset tool does, for one topology. With every instance stopped it moves
// the group's committed input offsets (to the log start, the end, or the
// first offset at a time), deletes the repartition and changelog topics
// (the next start creates them empty) and the group's offsets on the
// repartition topics. The committed input offsets carry no metadata
// after it: no watermark progress, no state witness (the processor's
// sources.go), so the next start does not take the empty changelogs for
// a loss.
//
// It talks to the cluster through an admin client it is given and must
// never import the runtime (processor), the pipeline, the tools' wiring
// (cmd), the web view (live), sideroute or the HTTP API.
package reset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sidestream/sidestream/internal/plan"
)

// To says where the input offsets go.
type To struct {
	// Latest moves them to the end (skip everything not yet read);
	// otherwise they go to the log start, or with At set, to the first
	// offset whose timestamp is at At or later (the end when none is).
	Latest bool
	At     time.Time
}

func (r To) String() string {
	switch {
	case r.Latest:
		return "latest"
	case !r.At.IsZero():
		return r.At.UTC().Format(time.RFC3339)
	}
	return "earliest"
}

// Offset is one input partition's committed offset before and after.
type Offset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"` // -1: none committed
	To        int64  `json:"to"`
}

// Plan is what a reset does; Apply does it.
type Plan struct {
	Group string `json:"group"`
	// Route is the one stateful route a route reset resets (NewRoutePlan);
	// empty for the application's reset. A route reset moves no input
	// offset (Inputs is empty, To "unchanged").
	Route  string   `json:"route,omitempty"`
	To     string   `json:"to"`
	Inputs []Offset `json:"inputs"`
	// Topics are the internal topics that exist, to delete.
	Topics []string `json:"delete_topics"`
	// Offsets are the internal topics the group has offsets on, to delete.
	Offsets []string `json:"delete_offsets"`
}

// ErrGroupActive: a reset needs every instance of the application stopped.
var ErrGroupActive = errors.New("the group has active members")

// groupIdle fails when the group has members.
func groupIdle(ctx context.Context, adm *kadm.Client, group string) error {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describe group %s: %w", group, err)
	}
	d, ok := ds[group]
	if !ok {
		return nil
	}
	if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
		return fmt.Errorf("describe group %s: %w", group, d.Err)
	}
	if len(d.Members) == 0 {
		return nil
	}
	var who []string
	for _, m := range d.Members {
		who = append(who, m.ClientID+"@"+m.ClientHost)
	}
	return fmt.Errorf("%w: group %s is %s with %d member(s) (%s): stop every router instance of the application first",
		ErrGroupActive, group, d.State, len(d.Members), strings.Join(who, ", "))
}

// NewPlan works out a reset of top's application from what the cluster
// holds; it changes nothing.
func NewPlan(ctx context.Context, adm *kadm.Client, top *plan.Plan, to To) (*Plan, error) {
	group := top.Settings.ApplicationID
	if err := groupIdle(ctx, adm, group); err != nil {
		return nil, err
	}
	plan := &Plan{Group: group, To: to.String()}
	inputs := top.InputTopics()
	var target kadm.ListedOffsets
	var err error
	switch {
	case to.Latest:
		target, err = adm.ListEndOffsets(ctx, inputs...)
	case !to.At.IsZero():
		target, err = adm.ListOffsetsAfterMilli(ctx, to.At.UnixMilli(), inputs...)
	default:
		target, err = adm.ListStartOffsets(ctx, inputs...)
	}
	if err == nil {
		err = target.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", strings.Join(inputs, ", "), err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("fetch committed offsets of group %s: %w", group, err)
	}
	target.Each(func(o kadm.ListedOffset) {
		from := int64(-1)
		if c, ok := committed.Lookup(o.Topic, o.Partition); ok && c.Err == nil {
			from = c.At
		}
		plan.Inputs = append(plan.Inputs, Offset{Topic: o.Topic, Partition: o.Partition, From: from, To: o.Offset})
	})
	slices.SortFunc(plan.Inputs, func(a, b Offset) int {
		return cmpTopicPartition(a.Topic, a.Partition, b.Topic, b.Partition)
	})

	repartition, changelog := top.InternalTopics()
	internal := append(append([]string{}, repartition...), changelog...)
	md, err := adm.ListTopics(ctx, internal...)
	if err != nil {
		return nil, fmt.Errorf("list internal topics: %w", err)
	}
	for _, t := range internal {
		if d, ok := md[t]; ok && d.Err == nil {
			plan.Topics = append(plan.Topics, t)
		}
	}
	for _, t := range repartition {
		if _, ok := committed[t]; ok {
			plan.Offsets = append(plan.Offsets, t)
		}
	}
	return plan, nil
}

func cmpTopicPartition(at string, ap int32, bt string, bp int32) int {
	if c := strings.Compare(at, bt); c != 0 {
		return c
	}
	return int(ap - bp)
}

// Apply carries the plan out: offsets on internal topics deleted, the
// internal topics deleted (and gone from the metadata), the input offsets
// committed. The group is checked idle again first.
func (plan *Plan) Apply(ctx context.Context, adm *kadm.Client) error {
	if err := groupIdle(ctx, adm, plan.Group); err != nil {
		return err
	}
	if len(plan.Offsets) > 0 {
		s := kadm.TopicsSet{}
		for _, t := range plan.Offsets {
			s.Add(t)
		}
		resp, err := adm.DeleteOffsets(ctx, plan.Group, s)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return fmt.Errorf("delete offsets of group %s on %s: %w", plan.Group, strings.Join(plan.Offsets, ", "), err)
		}
	}
	if len(plan.Topics) > 0 {
		resp, err := adm.DeleteTopics(ctx, plan.Topics...)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("delete topics %s: %w", strings.Join(plan.Topics, ", "), err)
		}
		// A start that finds a topic still being deleted cannot create it.
		for {
			md, err := adm.ListTopics(ctx, plan.Topics...)
			if err == nil {
				left := 0
				for _, t := range plan.Topics {
					if d, ok := md[t]; ok && d.Err == nil {
						left++
					}
				}
				if left == 0 {
					break
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("wait for topics %s to be deleted: %w", strings.Join(plan.Topics, ", "), ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	if len(plan.Inputs) == 0 {
		return nil
	}
	offs := kadm.Offsets{}
	for _, in := range plan.Inputs {
		offs.Add(kadm.Offset{Topic: in.Topic, Partition: in.Partition, At: in.To, LeaderEpoch: -1})
	}
	if err := adm.CommitAllOffsets(ctx, plan.Group, offs); err != nil {
		return fmt.Errorf("commit input offsets of group %s: %w", plan.Group, err)
	}
	return nil
}
