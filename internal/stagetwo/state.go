package stagetwo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/operator/assembly"
)

type assemblyHeld = assembly.Held

// ErrStateMoved: the task was dropped (revoke, abort, new session) while a
// state query restored it; the query may be retried.
var ErrStateMoved = &UnavailableError{Reason: "the partition's state was dropped by a rebalance or an aborted transaction while it was restored; retry"}

// UnavailableError means the state cannot be read right now (not started,
// restoring, rebalancing); a retry may succeed. The API answers 503.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return "state unavailable: " + e.Reason }

// Unavailable marks the error for the API.
func (*UnavailableError) Unavailable() bool { return true }

// Owner is the group member a partition is assigned to.
type Owner struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id,omitempty"`
	Host       string `json:"host,omitempty"`
	// URL is the same query on the owner's HTTP API, built from the
	// owner URL template (--owner-url-template); absent without one.
	URL string `json:"url,omitempty"`
}

// NotOwnerError means the key's partition is not assigned to this
// instance. Owner is nil when the group's assignment does not name one
// (rebalancing, or the description failed: OwnerErr says why).
type NotOwnerError struct {
	Route     string
	Key       string
	Topic     string
	Partition int32
	Owner     *Owner
	OwnerErr  string
}

func (e *NotOwnerError) Error() string {
	s := fmt.Sprintf("route %q: key %q is in partition %d of %s, which this instance does not own", e.Route, e.Key, e.Partition, e.Topic)
	switch {
	case e.Owner != nil:
		s += fmt.Sprintf("; its owner is member %s", e.Owner.MemberID)
		if e.Owner.InstanceID != "" {
			s += " (instance " + e.Owner.InstanceID + ")"
		}
		if e.Owner.Host != "" {
			s += " on host " + e.Owner.Host
		}
		if e.Owner.URL != "" {
			s += "; ask " + e.Owner.URL
		}
	case e.OwnerErr != "":
		s += "; owner unknown: " + e.OwnerErr
	default:
		s += "; no member owns it now (rebalancing?)"
	}
	return s
}

// NotOwner returns what the API shows of the owner: its member, instance
// and host, or nil when unknown.
func (e *NotOwnerError) NotOwner() any {
	if e.Owner == nil {
		return nil
	}
	return e.Owner
}

// WindowState is the state of one window route, as the API reads it.
type WindowState struct {
	st    *Stage
	route *windowRoute
}

// WindowStateView is the answer of a window state query: the windows held
// for one group key on this instance. Each window is the value a result
// record would carry now: key, window_start, window_end (epoch ms),
// aggregates, revision (of the last emission; 0 before the first) and
// final (always false: the window is open). The state includes the
// changes of the transaction in progress.
type WindowStateView struct {
	Route       string            `json:"route"`
	Key         string            `json:"key"`
	Topic       string            `json:"topic"`
	Partition   int32             `json:"partition"`
	Watermark   *int64            `json:"watermark"` // epoch ms; null before any record
	OpenWindows int               `json:"open_windows_in_partition"`
	Windows     []json.RawMessage `json:"windows"`
}

// StateReader answers an interactive query on one stateful operator's
// state for one key (api.StateReader has the same method). Errors:
// *NotOwnerError, *UnavailableError, or any other for a failure.
type StateReader interface {
	ReadState(ctx context.Context, key string) (any, error)
}

var _ StateReader = (*WindowState)(nil)

// StateReaders returns every stateful operator's reader by operator name:
// the window routes now; another stateful operator (assembly) adds its
// own here under its name. The API serves them as GET
// /state/{operator}?key=K.
func (s *Stage) StateReaders() map[string]StateReader {
	out := map[string]StateReader{}
	for _, wr := range s.ws.routes {
		out[wr.rt.Name] = &WindowState{st: s, route: wr}
	}
	for _, ar := range s.as.routes {
		out[ar.rt.Name] = &AssemblyState{st: s, route: ar}
	}
	return out
}

// AssemblyState is the state of one assembly route, as the API reads it.
type AssemblyState struct {
	st    *Stage
	route *assemblyRoute
}

var _ StateReader = (*AssemblyState)(nil)

// AssemblyStateView is the answer of an assembly state query: what this
// instance holds for one ID (the open assembly's parts, first and last
// part times, deadline and missing parts; or the completed marker and how
// long it is kept). Held is false when nothing is held for the ID.
type AssemblyStateView struct {
	Route     string `json:"route"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Held      bool   `json:"held"`
	assemblyHeld
}

// ReadState returns what is held for one ID, or a *NotOwnerError when
// another member owns the ID's partition, or an *UnavailableError while
// the partition's state is not loaded (it is, at the first part after an
// assignment).
func (s *AssemblyState) ReadState(ctx context.Context, id string) (any, error) {
	st, rt := s.st, s.route.rt
	topic := rt.Assembly.RepartitionTopic
	part, err := st.ownedPartition(ctx, rt.Name, topic, id)
	if err != nil {
		return nil, err
	}
	t, ok := st.as.Get(topic, part)
	if !ok {
		return nil, &UnavailableError{Reason: fmt.Sprintf("partition %d's state is loaded at its first part since the assignment; none arrived yet", part)}
	}
	t.mu.Lock()
	h, held, err := t.op.Held(id)
	t.mu.Unlock()
	if errors.Is(err, changelog.ErrClosed) {
		return nil, ErrStateMoved
	}
	if err != nil {
		return nil, fmt.Errorf("route %q partition %d: read the assembly of %q: %w", rt.Name, part, id, err)
	}
	return &AssemblyStateView{Route: rt.Name, Topic: topic, Partition: part, Held: held, assemblyHeld: h}, nil
}

// ReadState returns the open windows of group key on this instance, or a
// *NotOwnerError when another member owns the key's partition, or an
// *UnavailableError.
func (s *WindowState) ReadState(ctx context.Context, key string) (any, error) {
	st, rt := s.st, s.route.rt
	topic := rt.Window.RepartitionTopic
	part, err := st.ownedPartition(ctx, rt.Name, topic, key)
	if err != nil {
		return nil, err
	}
	t, err := st.windowTask(ctx, topic, part)
	if err != nil {
		var ue *UnavailableError
		if errors.As(err, &ue) {
			return nil, err
		}
		return nil, &UnavailableError{Reason: err.Error()}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ws, err := t.op.WindowsOf(key)
	if errors.Is(err, changelog.ErrClosed) {
		return nil, ErrStateMoved
	}
	if err != nil {
		return nil, fmt.Errorf("route %q partition %d: read windows of key %q: %w", rt.Name, part, key, err)
	}
	v := &WindowStateView{Route: rt.Name, Key: key, Topic: topic, Partition: part,
		OpenWindows: t.op.OpenWindows(), Windows: make([]json.RawMessage, len(ws))}
	if wm := t.op.Watermark(); wm > math.MinInt64 {
		v.Watermark = &wm
	}
	for i, w := range ws {
		v.Windows[i] = w.Value
	}
	return v, nil
}

// ownedPartition is the partition of a stateful route's repartition topic
// that holds key, when this instance owns it; otherwise a *NotOwnerError
// naming the owner, or an *UnavailableError before the internal topics are
// known.
func (s *Stage) ownedPartition(ctx context.Context, route, topic, key string) (int32, error) {
	n := s.ws.partitions.Load()
	if n <= 0 {
		return 0, &UnavailableError{Reason: "the router has not created or checked its internal topics yet"}
	}
	part := KeyPartition(s.part, topic, []byte(key), int(n))
	owned := topic
	if s.IsDirect(topic) {
		// No repartition topic: the task is the input partition's.
		owned = s.top.InputTopics()[0]
	}
	if !s.rt.Assigned(owned, part) {
		e := &NotOwnerError{Route: route, Key: key, Topic: owned, Partition: part}
		e.Owner, e.OwnerErr = s.partitionOwner(ctx, owned, part)
		if e.Owner != nil && s.ownerURL != "" {
			e.Owner.URL = OwnerURL(s.ownerURL, e.Owner, route, key)
		}
		return 0, e
	}
	return part, nil
}

// KeyPartition is the partition the producer writes a keyed record to.
// Keyed records are hashed (Kafka's murmur2) by every partitioner the
// router uses, so this is the partition of the repartition topic, and of
// the changelog and task, that holds the key's state.
func KeyPartition(pr kgo.Partitioner, topic string, key []byte, n int) int32 {
	r := &kgo.Record{Topic: topic, Key: key}
	tp := pr.ForTopic(topic)
	if bp, ok := tp.(kgo.TopicBackupPartitioner); ok {
		return int32(bp.PartitionByBackup(r, n, nil))
	}
	return int32(tp.Partition(r, n))
}

// partitionOwner asks the group coordinator which member holds a
// partition. Nil, "" means no member holds it.
func (s *Stage) partitionOwner(ctx context.Context, topic string, part int32) (*Owner, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	group := s.top.Settings.ApplicationID
	gs, err := s.rt.Admin().DescribeGroups(ctx, group)
	if err == nil {
		err = gs.Error()
	}
	if err != nil {
		return nil, "describe group " + group + ": " + err.Error()
	}
	g, ok := gs[group]
	if !ok {
		return nil, "group " + group + " not described"
	}
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range a.Topics {
			if t.Topic == topic && slices.Contains(t.Partitions, part) {
				o := &Owner{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
				if m.InstanceID != nil {
					o.InstanceID = *m.InstanceID
				}
				return o, ""
			}
		}
	}
	return nil, ""
}

// OwnerURL is the state query for key on route at the owner's HTTP API:
// tmpl with {instance} (the owner's instance id, else its client id) and
// {host} (its client address) replaced, then /state/ROUTE?key=KEY.
func OwnerURL(tmpl string, o *Owner, route, key string) string {
	inst := o.InstanceID
	if inst == "" {
		inst = o.ClientID
	}
	return InstanceURL(tmpl, inst, o.Host) + "/state/" + url.PathEscape(route) + "?key=" + url.QueryEscape(key)
}

// InstanceURL is the base URL of an instance's HTTP API, without a
// trailing slash: tmpl with {instance} and {host} (a group member's
// client address as the broker reports it) replaced. The web view's
// cluster view reaches its peers by it.
func InstanceURL(tmpl, instance, host string) string {
	host = strings.TrimPrefix(host, "/") // the broker reports "/10.0.0.7"
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]" // IPv6
	}
	base := strings.NewReplacer("{instance}", instance, "{host}", host).Replace(tmpl)
	return strings.TrimSuffix(base, "/")
}

// CheckOwnerURL reports whether tmpl makes an absolute http(s) URL
// without a query, and names {instance} or {host}: a template that names
// neither would send every query to one address.
func CheckOwnerURL(tmpl string) error {
	if !strings.Contains(tmpl, "{instance}") && !strings.Contains(tmpl, "{host}") {
		return fmt.Errorf("owner URL template %q names neither {instance} nor {host}", tmpl)
	}
	u, err := url.Parse(strings.NewReplacer("{instance}", "router-0", "{host}", "10.0.0.7").Replace(tmpl))
	if err != nil {
		return fmt.Errorf("owner URL template %q: %w", tmpl, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("owner URL template %q: want an absolute http or https URL without query, like http://{instance}.router-headless:8080", tmpl)
	}
	return nil
}
