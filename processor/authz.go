package processor

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicError is a produce failure of one record, naming its topic.
type TopicError struct {
	Topic string
	Err   error
}

func (e *TopicError) Error() string { return "topic " + e.Topic + ": " + e.Err.Error() }
func (e *TopicError) Unwrap() error { return e.Err }

// authzRefused reports whether err is a write the broker's authorizer
// refused, and the topic.
func authzRefused(err error) (string, bool) {
	var te *TopicError
	if !errors.As(err, &te) || !errors.Is(err, kerr.TopicAuthorizationFailed) {
		return "", false
	}
	return te.Topic, true
}
