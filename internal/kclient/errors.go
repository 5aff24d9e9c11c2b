package kclient

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicError is a produce failure of one record, naming its topic.
type TopicError struct {
	Topic string
	Err   error
}

func (e *TopicError) Error() string { return "topic " + e.Topic + ": " + e.Err.Error() }
func (e *TopicError) Unwrap() error { return e.Err }

// AuthzRefused reports whether err is a write the broker's authorizer
// refused, and the topic.
func AuthzRefused(err error) (string, bool) {
	var te *TopicError
	if !errors.As(err, &te) || !errors.Is(err, kerr.TopicAuthorizationFailed) {
		return "", false
	}
	return te.Topic, true
}

// Class is what the router does after an error of one of its clients.
// The process itself never stops on one: Run builds a new session.
type Class int

const (
	// Retry: the client retries on its own (a leader moved, a broker is
	// down, an input deleted or refused by an ACL, the poll's deadline);
	// the loop logs it and polls again, nothing is undone.
	Retry Class = iota
	// Abort: the transaction is aborted, nothing of its batch commits;
	// after a backoff the same client processes the batch again (a write
	// refused by an ACL, a record the broker rejected, a timeout). Under
	// at-least-once, where there is no transaction, the interval's offsets
	// are not committed and the consumer is rewound to the committed ones
	// in the same way (outputs already written are written again).
	Abort
	// Fatal: this client cannot go on (a fenced producer, a closed
	// client, a topic deleted under it); the session ends and the next
	// one, after a backoff, builds a new client. Nothing of the batch
	// commits, under either guarantee.
	Fatal
)

func (c Class) String() string {
	switch c {
	case Retry:
		return "retry"
	case Abort:
		return "abort"
	case Fatal:
		return "fatal"
	}
	return "unknown"
}

// Op is where an error came from: the same broker error means one thing
// for a fetch, which the client retries, and another for a produce,
// which failed its record.
type Op int

const (
	Fetch   Op = iota // a poll's fetch error (kgo.Fetches.Errors)
	Produce           // a record's produce promise
)

// Classify is the one place the router decides what an error of its
// Kafka clients means.
//
// A closed client is fatal everywhere. Every other fetch error is
// retried by the client itself. A produce error is fatal when the
// producer can no longer write: fenced (another instance took the
// transactional ID, or the epoch moved on), the transactional ID refused
// by an ACL, the producer ID mapping expired, or a topic deleted under
// the client: franz-go keeps the deleted topic's ID and never adopts a
// recreated topic's, so only a new client can write to it again. Any
// other produce error aborts the transaction. A nil error is Retry.
func Classify(op Op, err error) Class {
	switch {
	case err == nil:
		return Retry
	case errors.Is(err, kgo.ErrClientClosed):
		return Fatal
	case op == Fetch:
		return Retry
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed), errors.Is(err, kerr.InvalidProducerIDMapping),
		errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return Fatal
	}
	return Abort
}
