package live

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/metrics"
)

// peer serves a Status at StatusPath to callers with the token.
func peer(t *testing.T, st Status, token string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != StatusPath {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestClusterView(t *testing.T) {
	top := load(t, "../../examples/logs-by-level.yaml")
	s := New(top, metrics.New(), Options{Tasks: func() []Task {
		return []Task{
			{Status: map[string]any{"topic": "logs", "partition": 0, "lag": 7}},
			{Status: map[string]any{"topic": "logs", "partition": 1, "lag": -1}},
		}
	}})
	up := peer(t, Status{Instance: "b", Partitions: []PartitionStatus{{Topic: "logs", Partition: 2, Lag: 3}}, Lag: 3,
		Rates: map[string]float64{"consumed/logs": 42}}, "tok")
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // a peer that is gone: its address refuses connections
	members := []Member{
		{Instance: "c", URL: down.URL, Assigned: map[string][]int32{"logs": {4, 5}}},
		{Instance: "b", URL: up.URL + "/", Assigned: map[string][]int32{"logs": {2, 3}}},
		{Instance: "a", Assigned: map[string][]int32{"logs": {0, 1}}},
		{Instance: "d", Assigned: map[string][]int32{}}, // no URL: no template
		// A member names itself: one whose id would steer the URL (and
		// the caller's token) elsewhere is not asked.
		{Instance: "e@evil.example/", URL: up.URL + "/", Assigned: map[string][]int32{}},
	}
	s.SetCluster(ClusterConfig{Self: "a", Members: func(context.Context) ([]Member, error) { return members, nil }})
	v := s.Cluster(context.Background(), "Bearer tok")
	if v.Error != "" || len(v.Instances) != 5 {
		t.Fatalf("view: %+v", v)
	}
	byName := map[string]InstanceView{}
	for i, in := range v.Instances {
		if i > 0 && v.Instances[i-1].Instance > in.Instance {
			t.Fatalf("instances not in order: %+v", v.Instances)
		}
		byName[in.Instance] = in
	}
	a := byName["a"]
	if !a.Self || !a.Reachable || a.Status == nil || a.Status.Lag != 7 || len(a.Status.Partitions) != 2 || a.Status.Instance != "a" {
		t.Fatalf("self: %+v %+v", a, a.Status)
	}
	b := byName["b"]
	if b.Self || !b.Reachable || b.Status == nil || b.Status.Rates["consumed/logs"] != 42 || b.Status.Lag != 3 || b.Error != "" {
		t.Fatalf("peer b: %+v", b)
	}
	c := byName["c"]
	if c.Reachable || c.Status != nil || !strings.Contains(c.Error, down.URL) || len(c.Assigned["logs"]) != 2 {
		t.Fatalf("peer c is down, want it marked unreachable with its partitions from the group: %+v", c)
	}
	if d := byName["d"]; d.Reachable || !strings.Contains(d.Error, "--owner-url-template") {
		t.Fatalf("peer d has no address: %+v", d)
	}
	if e := byName["e@evil.example/"]; e.Reachable || !strings.Contains(e.Error, "not asked") {
		t.Fatalf("peer e with an unsafe id: %+v", e)
	}
	// The peers are asked with the caller's credentials: without them b
	// refuses, and is unreachable too.
	v = s.Cluster(context.Background(), "")
	for _, in := range v.Instances {
		if in.Instance == "b" && (in.Reachable || !strings.Contains(in.Error, "401")) {
			t.Fatalf("b without a token: %+v", in)
		}
	}
}

func TestClusterViewWithoutMembers(t *testing.T) {
	top := load(t, "../../examples/logs-by-level.yaml")
	s := New(top, metrics.New(), Options{})
	// Never set: this instance alone.
	if v := s.Cluster(context.Background(), ""); len(v.Instances) != 1 || !v.Instances[0].Self {
		t.Fatalf("alone: %+v", v)
	}
	// The group cannot be described: the error is said, and this
	// instance still shows.
	s.SetCluster(ClusterConfig{Self: "a", Members: func(context.Context) ([]Member, error) { return nil, errors.New("broker down") }})
	v := s.Cluster(context.Background(), "")
	if !strings.Contains(v.Error, "broker down") || len(v.Instances) != 1 || v.Instances[0].Instance != "a" || !v.Instances[0].Reachable {
		t.Fatalf("members failing: %+v", v)
	}
}
