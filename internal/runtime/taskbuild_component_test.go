package runtime

import (
	"context"
	"errors"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stagetwo"
)

// restores is how many restores the duration histogram has observed.
func restores(t *testing.T, p *Processor) uint64 {
	t.Helper()
	var m dto.Metric
	if err := p.Metrics().RestoreDuration.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestTaskBuildRacingRebalance: a task build (window or assembly) during
// which its partition is dropped (a rebalance revoked it while its store
// was restored) is discarded: the caller gets errStateMoved, the set does
// not hold the task, its store is closed and its restore is not counted. The next build, with no drop
// racing it, is kept.
func TestTaskBuildRacingRebalance(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(6, "orders", "payments"))
	brokers := c.ListenAddrs()
	// Direct routes (repartition: false): an empty changelog needs no
	// group to look up what witnesses its state.
	wtop := compileVariant(t, brokers, [2]string{"      emit: update\n", "      emit: update\n      repartition: false\n"})
	atop := twoInputs(t, brokers)
	w, a := wtop.Windows()[0].Window, atop.Assemblies()[0].Assembly
	cases := []struct {
		name         string
		top          *plan.Plan
		rep, clTopic string
		opt          func(changelog.Builder) Opt
		build        func(p *Processor, rep string) (changelog.Store, error)
		held         func(p *Processor, rep string) bool
	}{
		{
			name: "window", top: wtop, rep: w.RepartitionTopic, clTopic: w.ChangelogTopic, opt: WithStoreBuilder,
			build: func(p *Processor, rep string) (changelog.Store, error) {
				tk, err := p.stage.Task(context.Background(), rep, 2)
				if err != nil {
					return nil, err
				}
				return tk.Store(), nil
			},
			held: func(p *Processor, rep string) bool { return p.stage.HasTask(rep, 2) },
		},
		{
			name: "assembly", top: atop, rep: a.RepartitionTopic, clTopic: a.ChangelogTopic, opt: withAssemblyStores,
			build: func(p *Processor, rep string) (changelog.Store, error) {
				tk, err := p.stage.Task(context.Background(), rep, 2)
				if err != nil {
					return nil, err
				}
				return tk.Store(), nil
			},
			held: func(p *Processor, rep string) bool { return p.stage.HasTask(rep, 2) },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(admCl.Close)
			adm := kadm.NewClient(admCl)
			if _, err := adm.CreateTopic(ctx, 6, 1, nil, tc.clTopic); err != nil {
				t.Fatal(err)
			}
			// The store builder runs inside the build, after its
			// generation was taken: the first build sees its partition
			// revoked right there.
			var p *Processor
			var stores []changelog.Store
			race := true
			builder := func(topic string, part int32) (changelog.Store, error) {
				if race {
					race = false
					p.dropState(map[string][]int32{tc.rep: {part}})
				}
				st := changelog.NewMemory()
				stores = append(stores, st)
				return st, nil
			}
			if p, err = New(tc.top, WithLogger(testLogger()), tc.opt(builder)); err != nil {
				t.Fatal(err)
			}
			p.adm = adm

			if _, err := tc.build(p, tc.rep); !errors.Is(err, stagetwo.ErrStateMoved) {
				t.Fatalf("a build its partition's drop raced with returned %v, want errStateMoved", err)
			}
			if tc.held(p, tc.rep) {
				t.Fatal("the stale task is held")
			}
			if n := restores(t, p); n != 0 {
				t.Fatalf("the discarded build's restore was counted (%d restores observed)", n)
			}
			if len(stores) != 1 {
				t.Fatalf("%d stores built, want 1", len(stores))
			}
			if err := stores[0].Set([]byte("k"), nil); !errors.Is(err, changelog.ErrClosed) {
				t.Fatalf("the discarded task's store is still open: %v", err)
			}

			st, err := tc.build(p, tc.rep)
			if err != nil {
				t.Fatalf("a build with no drop racing it: %v", err)
			}
			if !tc.held(p, tc.rep) || len(stores) != 2 || st != stores[1] {
				t.Fatalf("the quiet build was not kept (held %v, %d stores)", tc.held(p, tc.rep), len(stores))
			}
			if n := restores(t, p); n != 1 {
				t.Fatalf("%d restores observed after one kept build, want 1", n)
			}
		})
	}
}
