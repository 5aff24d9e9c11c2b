package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/wire"
)

// TestOutputLimitsComponent: each output's records are bounded by its
// topic's max.message.bytes, read from the broker at start, not by
// dirty.max_record_bytes. A valid record of about 1 MB (over the dirty
// cap of 1,000,000) reaches its route, whose topic allows it; one over
// its route topic's own limit goes to dirty whole, with that limit in
// its error, and is not truncated, so it can be redriven.
func TestOutputLimitsComponent(t *testing.T) {
	cl := newCluster(t, kfake.SeedTopics(1, "in"))
	brokers := cl.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	pcl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("in"), kgo.ProducerBatchMaxBytes(2<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	tight := "300000"
	if _, err := kadm.NewClient(pcl).CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &tight}, "out.tight"); err != nil {
		t.Fatal(err)
	}
	top := compileAt(t, "limits.yaml", `application_id: limits
inputs: [{topic: in}]
routing: {default: big}
routes:
  - {name: tight, topic: out.tight, when: 'kind == "tight"'}
  - {name: big, topic: out.big}
dirty: {topic: dirty}
`, brokers, "")

	big := `{"kind":"big","pad":"` + strings.Repeat("b", 1_010_000) + `"}` // 990 KiB and more
	over := `{"kind":"tight","pad":"` + strings.Repeat("t", 400_000) + `"}`
	for _, v := range []string{big, over} {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	r := start(t, top, "a")
	waitConsumed(t, r.p.Metrics(), 2, time.Minute)
	r.stop(t)

	recs := readCommitted(t, brokers, "out.big", "out.tight", "dirty")
	byTopic := map[string][]*kgo.Record{}
	for _, rec := range recs {
		byTopic[rec.Topic] = append(byTopic[rec.Topic], rec)
	}
	if got := byTopic["out.big"]; len(got) != 1 || string(got[0].Value) != big {
		t.Fatalf("out.big holds %d records, want the %d-byte record whole", len(got), len(big))
	}
	if n := len(byTopic["out.tight"]); n != 0 {
		t.Fatalf("out.tight holds %d records over its limit", n)
	}
	dirty := byTopic["dirty"]
	if len(dirty) != 1 {
		t.Fatalf("dirty holds %d records, want 1", len(dirty))
	}
	rs := wire.Decode(dirty[0].Headers)
	if rs.Reason != wire.ReasonTooLarge || !strings.Contains(rs.Error, `over the limit of topic "out.tight": 299488 bytes`) {
		t.Errorf("dirty reason %q, error %q: want too_large with the topic's limit", rs.Reason, rs.Error)
	}
	if rs.TruncatedFrom != 0 || string(dirty[0].Value) != over {
		t.Errorf("dirty record truncated from %d, %d bytes of %d: want it whole, so redrive takes it", rs.TruncatedFrom, len(dirty[0].Value), len(over))
	}
}
