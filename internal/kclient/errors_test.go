package kclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClassify pins the decisions of the commit loops: which produce
// errors end the session (a new client), which abort the transaction
// and process the batch again, and that a fetch error never does either
// unless the client is closed. Each error is classified bare, in a
// TopicError as the produce promises wrap it, and wrapped again as the
// loops return it.
func TestClassify(t *testing.T) {
	tests := []struct {
		err     error
		fetch   Class
		produce Class
	}{
		// The producer cannot go on: a new client.
		{kerr.ProducerFenced, Retry, Fatal},
		{kerr.InvalidProducerEpoch, Retry, Fatal},
		{kerr.TransactionalIDAuthorizationFailed, Retry, Fatal},
		{kerr.InvalidProducerIDMapping, Retry, Fatal},
		// A topic deleted under the client: only a new client adopts
		// the recreated topic's ID. An input deleted is a fetch error
		// the client keeps retrying.
		{kerr.UnknownTopicOrPartition, Retry, Fatal},
		{kerr.UnknownTopicID, Retry, Fatal},
		{kgo.ErrClientClosed, Fatal, Fatal},
		// Abort and process the batch again, same client.
		{kerr.TopicAuthorizationFailed, Retry, Abort},
		{kerr.MessageTooLarge, Retry, Abort},
		{kerr.RecordListTooLarge, Retry, Abort},
		{kerr.InvalidRecord, Retry, Abort},
		{kerr.CorruptMessage, Retry, Abort},
		{kerr.NotEnoughReplicas, Retry, Abort},
		{kerr.RequestTimedOut, Retry, Abort},
		{kerr.InvalidTxnState, Retry, Abort}, // not fatal today: the next Begin tells
		{kerr.ConcurrentTransactions, Retry, Abort},
		{kerr.GroupAuthorizationFailed, Retry, Abort},
		{kgo.ErrRecordTimeout, Retry, Abort},
		{kgo.ErrRecordRetries, Retry, Abort},
		{kgo.ErrAborting, Retry, Abort},
		{context.DeadlineExceeded, Retry, Abort},
		{context.Canceled, Retry, Abort},
		{kerr.NotLeaderForPartition, Retry, Abort},
		{kerr.OffsetOutOfRange, Retry, Abort},
		{io.EOF, Retry, Abort},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), Retry, Abort},
	}
	for _, tt := range tests {
		for _, err := range []error{
			tt.err,
			&TopicError{Topic: "out", Err: tt.err},
			fmt.Errorf("produce: %w", &TopicError{Topic: "out", Err: tt.err}),
			fmt.Errorf("fetch: %w", tt.err),
		} {
			if got := Classify(Fetch, err); got != tt.fetch {
				t.Errorf("Classify(Fetch, %v) = %v, want %v", err, got, tt.fetch)
			}
			if got := Classify(Produce, err); got != tt.produce {
				t.Errorf("Classify(Produce, %v) = %v, want %v", err, got, tt.produce)
			}
		}
	}
	if Classify(Produce, nil) != Retry || Classify(Fetch, nil) != Retry {
		t.Error("a nil error is not Retry")
	}
	// A produce error text that names a fatal error but does not wrap it
	// is not fatal: the decision is on the error's identity.
	if got := Classify(Produce, errors.New(kerr.ProducerFenced.Error())); got != Abort {
		t.Errorf("an unwrapped copy of PRODUCER_FENCED's text: %v, want abort", got)
	}
}

func TestClassString(t *testing.T) {
	for c, want := range map[Class]string{Retry: "retry", Abort: "abort", Fatal: "fatal", Class(9): "unknown"} {
		if c.String() != want {
			t.Errorf("%d: %q, want %q", int(c), c.String(), want)
		}
	}
}

func TestAuthzRefused(t *testing.T) {
	tests := []struct {
		err   error
		topic string
		ok    bool
	}{
		{&TopicError{Topic: "errors", Err: kerr.TopicAuthorizationFailed}, "errors", true},
		{fmt.Errorf("produce: %w", &TopicError{Topic: "warn", Err: kerr.TopicAuthorizationFailed}), "warn", true},
		{&TopicError{Topic: "errors", Err: kerr.MessageTooLarge}, "", false},
		{kerr.TopicAuthorizationFailed, "", false}, // no topic named: not a refused write
		{&TopicError{Topic: "t", Err: kerr.TransactionalIDAuthorizationFailed}, "", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		topic, ok := AuthzRefused(tt.err)
		if topic != tt.topic || ok != tt.ok {
			t.Errorf("AuthzRefused(%v) = %q, %v; want %q, %v", tt.err, topic, ok, tt.topic, tt.ok)
		}
	}
	te := &TopicError{Topic: "out", Err: kerr.MessageTooLarge}
	if te.Error() != "topic out: "+kerr.MessageTooLarge.Error() || !errors.Is(te, kerr.MessageTooLarge) {
		t.Errorf("TopicError %q does not name the topic or unwrap", te)
	}
}
