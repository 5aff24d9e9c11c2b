package plan

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// assembleOrders is examples/assemble-orders.yaml with extra lines after
// the assembly's duplicate_topic.
func assembleOrders(t *testing.T, extra string) *Plan {
	t.Helper()
	b, err := os.ReadFile("../../examples/assemble-orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "      duplicate_topic: orders.duplicate\n", "      duplicate_topic: orders.duplicate\n"+extra, 1)
	top, err := Compile(mustLoad(t, src), "")
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func TestAssemblyRepartition(t *testing.T) {
	const rep, cl = "assemble-orders-assembled-repartition", "assemble-orders-assembled-changelog"
	for _, tc := range []struct {
		name, extra string
		direct      bool
	}{
		{"default", "", false},
		{"true", "      repartition: true\n", false},
		{"false", "      repartition: false\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := assembleOrders(t, tc.extra)
			a := top.Route("assembled").Assembly
			if a.Direct != tc.direct {
				t.Fatalf("Direct = %v, want %v", a.Direct, tc.direct)
			}
			if a.RepartitionTopic != rep {
				t.Errorf("RepartitionTopic = %q, want %q (the name its tasks are known by)", a.RepartitionTopic, rep)
			}
			reps, cls := top.InternalTopics()
			if got := slices.Contains(reps, rep); got == tc.direct {
				t.Errorf("InternalTopics repartition = %q: holds %s = %v, want %v", reps, rep, got, !tc.direct)
			}
			if !slices.Contains(cls, cl) {
				t.Errorf("InternalTopics changelog = %q, want %s (a direct route keeps its changelog)", cls, cl)
			}
			d := top.Description().Routes[2].Assemble
			if d.Repartition == tc.direct || (d.RepartitionTopic == "") != tc.direct {
				t.Errorf("described repartition = %v, topic %q; direct %v", d.Repartition, d.RepartitionTopic, tc.direct)
			}
		})
	}
}
