//go:build sidestream_kip848

package main

import "github.com/twmb/franz-go/pkg/kgo"

// A test build for the compatibility matrix (scripts/compat.sh,
// itest with SIDESTREAM_IT_GROUP_PROTOCOL=consumer): the group joins with
// KIP-848's consumer protocol, the broker assigning the partitions (Kafka
// 4.0+; franz-go advises 4.3+). franz-go falls back to the classic
// protocol, and logs it, where the broker lacks KIP-848. The session
// timeout is then the broker's group.consumer.session.timeout.ms, not
// --session-timeout. Not a setting: the router's protocol is the classic
// one (docs/compatibility.md).
func init() { testBuildKgoOpts = append(testBuildKgoOpts, kgo.ServerSideBalancer()) }
