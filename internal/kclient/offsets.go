package kclient

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UnstablePartitions asks the group coordinator, with RequireStable, which
// of parts have offsets held pending by a transaction (UNSTABLE_OFFSET_COMMIT):
// the probe of offsets a lost transaction marker left pending. A group
// that does not exist holds nothing pending.
func UnstablePartitions(ctx context.Context, cl *kgo.Client, group string, parts map[string][]int32) (map[string][]int32, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	req.RequireStable = true
	for topic, ps := range parts {
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = topic, ps
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return nil, nil // a new group holds nothing pending
		}
		return nil, err
	}
	topics := resp.Topics
	if len(resp.Groups) == 1 { // v8+ answers per group
		if err := kerr.ErrorForCode(resp.Groups[0].ErrorCode); err != nil {
			if errors.Is(err, kerr.GroupIDNotFound) {
				return nil, nil
			}
			return nil, err
		}
		for _, t := range resp.Groups[0].Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			topics = append(topics, rt)
		}
	}
	var out map[string][]int32
	for _, t := range topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == kerr.UnstableOffsetCommit.Code {
				if out == nil {
					out = map[string][]int32{}
				}
				out[t.Topic] = append(out[t.Topic], p.Partition)
			}
		}
	}
	return out, nil
}
