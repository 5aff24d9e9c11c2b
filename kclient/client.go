package kclient

import (
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/topology"
)

// Opts are the client section's options: the fetch and produce buffers'
// bounds and the metadata minimum age; a zero field keeps franz-go's
// default.
func Opts(c topology.Client) []kgo.Opt {
	var o []kgo.Opt
	if c.FetchMaxBytes > 0 {
		o = append(o, kgo.FetchMaxBytes(c.FetchMaxBytes))
	}
	if c.FetchMaxPartitionBytes > 0 {
		o = append(o, kgo.FetchMaxPartitionBytes(c.FetchMaxPartitionBytes))
	}
	if c.MaxConcurrentFetches > 0 {
		o = append(o, kgo.MaxConcurrentFetches(c.MaxConcurrentFetches))
	}
	if c.MaxBufferedRecords > 0 {
		o = append(o, kgo.MaxBufferedRecords(c.MaxBufferedRecords))
	}
	if c.MaxBufferedBytes > 0 {
		o = append(o, kgo.MaxBufferedBytes(c.MaxBufferedBytes))
	}
	if c.MetadataMinAge > 0 {
		o = append(o, kgo.MetadataMinAge(c.MetadataMinAge.D()))
	}
	return o
}

// NewAdmin is an admin client on brokers with opts (SecurityOpts among
// them); close the kgo.Client when done.
func NewAdmin(brokers []string, opts ...kgo.Opt) (*kadm.Client, *kgo.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}
