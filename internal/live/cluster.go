package live

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// StatusPath is where an instance serves its Status, under its API's
// base URL; the cluster view asks every peer for it.
const StatusPath = "/ui/status"

// peerTimeout bounds one peer's answer: a peer that is slower counts as
// unreachable for this view.
const peerTimeout = 2 * time.Second

// Member is one member of the application's consumer group.
type Member struct {
	// Instance is its instance id (the client id the router gives its
	// group member).
	Instance string `json:"instance"`
	Host     string `json:"host"`
	// URL is its API's base URL from the owner URL template ("": no
	// template, so it cannot be asked).
	URL string `json:"url,omitempty"`
	// Assigned are its partitions by topic, as the group assigned them.
	Assigned map[string][]int32 `json:"assigned"`
}

// ClusterConfig says how to find the other instances.
type ClusterConfig struct {
	// Self is this process's instance id.
	Self string
	// Members lists the group's members (kadm DescribeGroups).
	Members func(ctx context.Context) ([]Member, error)
	// Client asks the peers (nil: one that follows no redirect).
	Client *http.Client
}

// Cluster gathers every instance's Status: its own directly, the others'
// from their APIs.
type Cluster struct {
	c    ClusterConfig
	self func() Status
}

// SetCluster makes the view cluster-wide with c (nil Members: this
// instance alone).
func (s *State) SetCluster(c ClusterConfig) {
	cl := &Cluster{c: c, self: s.Status}
	s.mu.Lock()
	s.cluster = cl
	s.mu.Unlock()
}

// PartitionStatus is one task of an instance: its partition and lag.
type PartitionStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Lag       int64  `json:"lag"`
	Route     string `json:"route,omitempty"`
}

// Status is what one instance says of itself to the cluster view.
type Status struct {
	Instance      string            `json:"instance"`
	ApplicationID string            `json:"application_id"`
	Now           int64             `json:"now"` // epoch ms
	Ready         *bool             `json:"ready,omitempty"`
	Reason        string            `json:"reason,omitempty"`
	Partitions    []PartitionStatus `json:"partitions"`
	// Lag is the sum of its input partitions' lags (-1 ones, not yet
	// known, left out).
	Lag int64 `json:"lag"`
	// Rates are View's rates per second, by the same keys.
	Rates map[string]float64 `json:"rates"`
}

// Status returns this instance's status.
func (s *State) Status() Status {
	v := s.View()
	s.mu.Lock()
	self := ""
	if s.cluster != nil {
		self = s.cluster.c.Self
	}
	s.mu.Unlock()
	st := Status{Instance: self, ApplicationID: v.ApplicationID, Now: v.Now, Ready: v.Ready, Reason: v.Reason,
		Partitions: []PartitionStatus{}, Rates: v.Rates}
	for _, t := range v.Tasks {
		b, err := json.Marshal(t)
		if err != nil {
			continue
		}
		var p PartitionStatus
		if json.Unmarshal(b, &p) != nil {
			continue
		}
		st.Partitions = append(st.Partitions, p)
		if p.Route == "" && p.Lag > 0 {
			st.Lag += p.Lag
		}
	}
	return st
}

// ClusterView is every instance of the application, as /ui/cluster
// serves it.
type ClusterView struct {
	Self string `json:"self"`
	// Error says why the members could not be listed; Instances then
	// holds this instance alone.
	Error     string         `json:"error,omitempty"`
	Instances []InstanceView `json:"instances"`
	Now       int64          `json:"now"`
}

// InstanceView is one instance: what the group says of it and, when it
// answered, its Status.
type InstanceView struct {
	Member
	Self bool `json:"self"`
	// Reachable: its status was read (always, for this instance).
	Reachable bool    `json:"reachable"`
	Error     string  `json:"error,omitempty"`
	Status    *Status `json:"status,omitempty"`
}

// Cluster returns every instance's view. auth is the Authorization
// header the peers are asked with (the caller's own: instances share
// their API tokens).
func (s *State) Cluster(ctx context.Context, auth string) ClusterView {
	s.mu.Lock()
	cl := s.cluster
	s.mu.Unlock()
	if cl == nil {
		cl = &Cluster{self: s.Status}
	}
	return cl.View(ctx, auth)
}

// View lists the members and asks each peer for its status, in parallel.
// This instance is always in the list, a member or not yet.
func (c *Cluster) View(ctx context.Context, auth string) ClusterView {
	self := c.self()
	v := ClusterView{Self: c.c.Self, Now: time.Now().UnixMilli()}
	var members []Member
	if c.c.Members != nil {
		var err error
		if members, err = c.c.Members(ctx); err != nil {
			v.Error = "list the group's members: " + err.Error()
		}
	}
	if !slices.ContainsFunc(members, func(m Member) bool { return m.Instance == c.c.Self }) {
		members = append(members, Member{Instance: c.c.Self})
	}
	v.Instances = make([]InstanceView, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		iv := &v.Instances[i]
		iv.Member = m
		if m.Instance == c.c.Self {
			iv.Self, iv.Reachable, iv.Status = true, true, &self
			continue
		}
		wg.Go(func() {
			st, err := c.ask(ctx, m, auth)
			if err != nil {
				iv.Error = err.Error()
				return
			}
			iv.Reachable, iv.Status = true, st
		})
	}
	wg.Wait()
	slices.SortFunc(v.Instances, func(a, b InstanceView) int { return strings.Compare(a.Instance, b.Instance) })
	return v
}

// peerClient asks the peers: it follows no redirect, so the caller's
// credentials go to the template's address only.
var peerClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// safeInstance and safeHost are what an instance id and the address the
// broker saw may hold to be put into a URL the caller's credentials go
// to: a member of the group chooses its own client id, and one like
// "evil.example/" must not steer them elsewhere.
var (
	safeInstance = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)
	safeHost     = regexp.MustCompile(`^/?[A-Za-z0-9._:\[\]-]*$`)
)

// ask reads one peer's Status.
func (c *Cluster) ask(ctx context.Context, m Member, auth string) (*Status, error) {
	if m.URL == "" {
		return nil, fmt.Errorf("no address: set --owner-url-template (SIDESTREAM_OWNER_URL_TEMPLATE) so instances reach each other")
	}
	if !safeInstance.MatchString(m.Instance) || !safeHost.MatchString(m.Host) {
		return nil, fmt.Errorf("not asked: its instance id %q or address %q has characters that do not belong in a host name", m.Instance, m.Host)
	}
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	u := strings.TrimSuffix(m.URL, "/") + StatusPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	hc := c.c.Client
	if hc == nil {
		hc = peerClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err // it names the method and URL
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var st Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&st); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return &st, nil
}
