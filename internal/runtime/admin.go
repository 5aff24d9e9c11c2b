package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sidestream/sidestream/internal/plan"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/retry"
	"github.com/sidestream/sidestream/internal/stagetwo"
)

// ErrMissingInput is returned when an input topic does not exist: the
// router creates its outputs, never its inputs.
var ErrMissingInput = errors.New("input topic does not exist")

// waitForBrokers blocks until the cluster answers a metadata request,
// retrying with backoff and reporting why on /readyz meanwhile.
func (p *Processor) waitForBrokers(ctx context.Context, adm *kadm.Client) error {
	retries := retry.New(250*time.Millisecond, 10*time.Second)
	for {
		reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		p.alive(func() { _, err = adm.BrokerMetadata(reqCtx) })
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reason := fmt.Sprintf("waiting for brokers %s: %s", strings.Join(p.top.Settings.Brokers, ","), kclient.WithHint(err, p.top.Settings.Security))
		p.obs.NotReady(reason)
		args := []any{"brokers", p.top.Settings.Brokers, "err", err}
		if h := kclient.ConnHint(err, p.top.Settings.Security); h != "" {
			args = append(args, "hint", h)
		}
		backoff := retries.Next()
		p.log.Warn("brokers unreachable, retrying", append(args, "backoff", backoff)...)
		// Waiting for brokers is waiting on purpose: /healthz stays 200
		// (a restart would not bring them), /readyz says why.
		if !p.idle(ctx, backoff) {
			return ctx.Err()
		}
	}
}

// ensureTopics checks the inputs exist and creates missing outputs with
// the configured partitions and replication factor.
func (p *Processor) ensureTopics(ctx context.Context, adm *kadm.Client) error {
	cfg := p.top.Settings
	inputs := p.top.InputTopics()
	outputs := p.top.OutputTopics()
	all := append(append([]string{}, inputs...), outputs...)
	md, err := adm.ListTopics(ctx, all...)
	if err != nil {
		return fmt.Errorf("list topics on %s: %w", strings.Join(cfg.Brokers, ","), err)
	}
	for _, t := range inputs {
		d, ok := md[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("%w: %q on brokers %s", ErrMissingInput, t, strings.Join(cfg.Brokers, ","))
		}
		if d.Err != nil {
			return fmt.Errorf("input topic %q: %w", t, d.Err)
		}
	}
	if err := p.ensureInternalTopics(ctx, adm, md); err != nil {
		return err
	}
	return p.ensureOutputs(ctx, adm, p.top, md)
}

// ensureOutputs creates top's missing output topics (md: their
// metadata) with the configured partitions and replication factor.
func (p *Processor) ensureOutputs(ctx context.Context, adm *kadm.Client, top *plan.Plan, md kadm.TopicDetails) error {
	cfg := top.Settings
	var missing []string
	for _, t := range top.OutputTopics() {
		d, ok := md[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			missing = append(missing, t)
		case d.Err != nil:
			return fmt.Errorf("output topic %q: %w", t, d.Err)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !*cfg.Topics.Create {
		return fmt.Errorf("output topics %v do not exist and topics.create is false", missing)
	}
	for _, t := range missing {
		configs := top.CreateConfigs(t)
		r, err := adm.CreateTopic(ctx, cfg.Topics.Partitions, cfg.Topics.ReplicationFactor, configs, t)
		if err == nil {
			err = r.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %q (%d partitions, replication %d, configs %s): %w", t, cfg.Topics.Partitions, cfg.Topics.ReplicationFactor, showConfigs(configs), err)
		}
		if err == nil {
			p.log.Info("created topic", "topic", t, "partitions", cfg.Topics.Partitions, "configs", showConfigs(configs))
		}
	}
	return nil
}

// showConfigs renders topic configs for a log line or an error, sorted.
func showConfigs(c map[string]*string) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + *c[k])
	}
	return "{" + b.String() + "}"
}

// ensureInternalTopics creates the repartition and changelog topics of
// window routes with as many partitions as the widest input, changelogs
// compacted, and checks existing ones are co-partitioned: a changelog
// partition holds exactly the state of the same repartition partition.
func (p *Processor) ensureInternalTopics(ctx context.Context, adm *kadm.Client, inputs kadm.TopicDetails) error {
	rep, cl := p.top.InternalTopics()
	if len(rep)+len(cl) == 0 {
		return nil
	}
	var parts int32
	var sources []string
	for _, t := range p.top.InputTopics() {
		parts = max(parts, int32(len(inputs[t].Partitions)))
		for _, pd := range inputs[t].Partitions.Sorted() {
			sources = append(sources, stagetwo.SourceID(t, pd.Partition))
		}
	}
	p.stage.SetSources(sources)
	if p.stage.HasDirect() {
		// repartition: false pairs partition i of every input with the
		// window or assembly task i: the inputs must agree on their
		// partition count.
		for _, t := range p.top.InputTopics() {
			if n := int32(len(inputs[t].Partitions)); n != parts {
				return fmt.Errorf("a window or assembly route has repartition: false, but input %q has %d partitions and another input %d: co-partitioning is broken", t, n, parts)
			}
		}
	}
	internal := append(append([]string{}, rep...), cl...)
	md, err := adm.ListTopics(ctx, internal...)
	if err != nil {
		return fmt.Errorf("list internal topics: %w", err)
	}
	var existingRep []string
	for _, t := range internal {
		d, ok := md[t]
		if ok && d.Err == nil {
			if n := int32(len(d.Partitions)); n != parts {
				return fmt.Errorf("internal topic %q has %d partitions, the inputs have %d: co-partitioning is broken (delete it, or match the input partitions)", t, n, parts)
			}
			if slices.Contains(rep, t) {
				existingRep = append(existingRep, t)
			}
			continue
		}
		if ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("internal topic %q: %w", t, d.Err)
		}
		configs := p.top.CreateConfigs(t)
		resp, err := adm.CreateTopic(ctx, parts, p.top.Settings.Topics.ReplicationFactor, configs, t)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create internal topic %q: %w", t, err)
		}
		if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create internal topic %q: %w", t, resp.Err)
		}
		p.log.Info("created internal topic", "topic", t, "partitions", parts, "configs", showConfigs(configs))
	}
	if err := p.checkRepartitionRetention(ctx, adm, existingRep); err != nil {
		return err
	}
	p.stage.SetPartitions(parts) // state queries may now compute a key's partition
	return nil
}

// ErrRepartitionRetention is returned at start, under
// topics.on_repartition_retention: fail, for an existing repartition
// topic that the broker expires by time or size.
var ErrRepartitionRetention = errors.New("repartition topic expires records by time or size")

// checkRepartitionRetention reports existing repartition topics whose
// records the broker deletes by time or size (created before the router
// set retention.ms=-1, or by hand): a replay's records carry old
// timestamps, and the broker may delete them before stage two reads
// them. Under warn it logs a WARN and puts the warning on /readyz; under
// fail it refuses to start.
func (p *Processor) checkRepartitionRetention(ctx context.Context, adm *kadm.Client, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return fmt.Errorf("describe repartition topic configs: %w", err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return fmt.Errorf("describe configs of repartition topic %q: %w", rc.Name, rc.Err)
		}
		var bad []string
		for _, c := range rc.Configs {
			v := c.MaybeValue()
			switch {
			case c.Key == "retention.ms" && v != "-1", c.Key == "retention.bytes" && v != "-1":
				bad = append(bad, c.Key+"="+v)
			case c.Key == "cleanup.policy" && v != "delete":
				bad = append(bad, c.Key+"="+v)
			}
		}
		if len(bad) == 0 {
			continue
		}
		slices.Sort(bad)
		why := fmt.Sprintf("repartition topic %s has %s: the broker may delete records before stage two reads them "+
			"(a replay's old timestamps expire at once); set retention.ms=-1, retention.bytes=-1, cleanup.policy=delete on it "+
			"(the router purges what the group committed)", rc.Name, strings.Join(bad, ", "))
		if p.top.Settings.Topics.OnRepartitionRetention == plan.RetentionFail {
			return fmt.Errorf("%w: %s (topics.on_repartition_retention: fail)", ErrRepartitionRetention, why)
		}
		p.obs.Warn(why)
		p.log.Warn("repartition topic expires records; gaps in it are counted as lost", "topic", rc.Name, "configs", strings.Join(bad, ", "))
	}
	return nil
}

// batchOverhead is what a record batch adds to a record beyond the
// size stage one measures (RecordSize errs large per record, not for the
// batch header): a record that fits its topic's limit less this fits the
// topic's max.message.bytes as one batch.
const batchOverhead = 512

// readOutputLimits reads the max.message.bytes of every topic the
// router writes (routes, repartition, late, overflow, incomplete,
// duplicate, dirty) and hands stage one each output's limit: the
// topic's less batchOverhead, or limits.max_record_bytes when smaller.
// The dirty topic keeps dirty.max_record_bytes. A broker that does not
// answer leaves the limits of the config (logged): the records are
// still bounded, by limits.max_record_bytes or dirty.max_record_bytes.
func (p *Processor) readOutputLimits(ctx context.Context, adm *kadm.Client) {
	limits, topicMax, err := p.outputLimits(ctx, adm, p.top)
	if err != nil {
		p.log.Warn("could not read the output topics' max.message.bytes; outputs are bounded by the config alone", "err", err)
		return
	}
	p.topicMax = topicMax
	p.eng.SetOutputLimits(limits)
	p.log.Info("output record limits", "limits", limits)
}

// outputLimits reads the limits of top's outputs (readOutputLimits): by
// topic, the record limits and the topics' max.message.bytes.
func (p *Processor) outputLimits(ctx context.Context, adm *kadm.Client, top *plan.Plan) (limits, topicMax map[string]int, err error) {
	repartition, _ := top.InternalTopics()
	topics := append(top.OutputTopics(), repartition...)
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, nil, err
	}
	topicMax, limits = map[string]int{}, map[string]int{}
	cfgMax := top.Settings.Limits.MaxRecordBytes
	for _, rc := range rcs {
		if rc.Err != nil {
			p.log.Warn("could not read a topic's max.message.bytes", "topic", rc.Name, "err", rc.Err)
			continue
		}
		for _, c := range rc.Configs {
			n, err := strconv.Atoi(c.MaybeValue())
			if c.Key != "max.message.bytes" || err != nil || n <= batchOverhead {
				continue
			}
			topicMax[rc.Name] = n
			if rc.Name == top.Dirty.Topic {
				if mr := top.Dirty.MaxRecordBytes; mr > n-batchOverhead {
					p.log.Warn("dirty.max_record_bytes is over the dirty topic's max.message.bytes: a dirty record that large would be refused; lower it, or raise the topic's",
						"topic", rc.Name, "max_record_bytes", mr, "max_message_bytes", n)
				}
				continue
			}
			limits[rc.Name] = n - batchOverhead
			if cfgMax > 0 {
				limits[rc.Name] = min(limits[rc.Name], cfgMax)
			}
		}
	}
	return limits, topicMax, nil
}

// batchMaxBytes is the producer's batch bound for topic: the topic's
// max.message.bytes when Run read it, else the bound before limits were
// read (room for a dirty.max_record_bytes record, at least 1 MiB).
func (p *Processor) batchMaxBytes(topic string) int32 {
	if n, ok := p.topicMax[topic]; ok {
		return int32(min(n, 1<<30))
	}
	return int32(max(p.top.Dirty.MaxRecordBytes+4096, p.top.Settings.Limits.MaxRecordBytes+4096, 1<<20))
}
