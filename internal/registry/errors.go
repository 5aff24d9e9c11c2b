package registry

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/wire"
)

// RecordError is a permanent failure of one record: it goes to the dirty
// route with Stage and Reason (wire codes) and the message, and the stream
// goes on. SchemaID is the framed id (-1 when the frame has none).
type RecordError struct {
	Stage    string
	Reason   string
	SchemaID int
	Err      error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Stage, e.Reason, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

func recErr(reason string, id int, format string, args ...any) *RecordError {
	stage := wire.StageDecode
	if reason == wire.ReasonJSONSchemaInvalid {
		stage = wire.StageSchema
	}
	return &RecordError{Stage: stage, Reason: reason, SchemaID: id, Err: fmt.Errorf(format, args...)}
}

// UnavailableError is a registry that could not answer: unreachable, a
// timeout, a 5xx, a 401/403/429 or any answer but a 404. It is never the
// record's fault: the caller backs off and retries the record (under
// exactly-once: aborts and replays the batch), says why on /readyz, and
// dirties nothing.
type UnavailableError struct {
	SchemaID int
	Err      error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("schema registry unavailable for schema id %d: %v", e.SchemaID, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// IsRetryable reports whether err is the registry being unavailable (an
// UnavailableError in its chain): retry later, do not dirty the record.
func IsRetryable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// Error kinds passed to Hooks.OnError (the kind label of
// metrics.NameRegistryErrors).
const (
	ErrorUnknownID   = "unknown_id"
	ErrorUnavailable = "unavailable"
	ErrorBadSchema   = "bad_schema"
)

// notFound reports whether a registry answer is a 404: the id (or a
// referenced subject version) does not exist. Only that is permanent.
func notFound(err error) bool {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode == 404
	}
	return false
}
