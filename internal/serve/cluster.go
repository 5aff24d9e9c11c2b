package serve

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/live"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stagetwo"
)

// groupMembers lists the application's group members for the web view's
// cluster view, on an admin client of its own made at the first call
// (the processor's is its loop's alone).
type groupMembers struct {
	group   string
	brokers []string
	opts    []kgo.Opt
	tmpl    string // the owner URL template ("": peers have no address)

	mu  sync.Mutex
	adm *kadm.Client
	cl  *kgo.Client
}

func newGroupMembers(top *plan.Plan, o Options) (*groupMembers, error) {
	sec, err := kclient.SecurityOpts(top.Settings.Security)
	if err != nil {
		return nil, err
	}
	return &groupMembers{group: top.Settings.ApplicationID, brokers: top.Settings.Brokers,
		opts: append(sec, o.KgoOpts...), tmpl: o.OwnerURL}, nil
}

// Members describes the group: each member's instance id (its client
// id), address, URL and assigned partitions.
func (g *groupMembers) Members(ctx context.Context) ([]live.Member, error) {
	adm, err := g.admin()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	gs, err := adm.DescribeGroups(ctx, g.group)
	if err == nil {
		err = gs.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("describe group %s: %w", g.group, err)
	}
	var out []live.Member
	for _, m := range gs[g.group].Members {
		inst := m.ClientID
		if m.InstanceID != nil && *m.InstanceID != "" {
			inst = *m.InstanceID
		}
		lm := live.Member{Instance: inst, Host: m.ClientHost, Assigned: map[string][]int32{}}
		if g.tmpl != "" {
			lm.URL = stagetwo.InstanceURL(g.tmpl, inst, m.ClientHost)
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				lm.Assigned[t.Topic] = append(lm.Assigned[t.Topic], t.Partitions...)
			}
		}
		out = append(out, lm)
	}
	return out, nil
}

func (g *groupMembers) admin() (*kadm.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.adm == nil {
		adm, cl, err := kclient.NewAdmin(g.brokers, g.opts...)
		if err != nil {
			return nil, fmt.Errorf("admin client: %w", err)
		}
		g.adm, g.cl = adm, cl
	}
	return g.adm, nil
}

// Close closes the admin client, if one was made.
func (g *groupMembers) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cl != nil {
		g.cl.Close()
		g.adm, g.cl = nil, nil
	}
}
