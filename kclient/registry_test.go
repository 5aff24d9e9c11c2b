package kclient

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// A registration the registry refused (4xx but 408 and 429) is not
// retried; an answer it could not give (5xx, 408, 429, no answer) is.
func TestRegistrationRefused(t *testing.T) {
	for _, c := range []struct {
		err     error
		refused bool
	}{
		{&sr.ResponseError{StatusCode: 409, ErrorCode: 409, Message: "incompatible"}, true},
		{fmt.Errorf("register: %w", &sr.ResponseError{StatusCode: 422, ErrorCode: 42201}), true},
		{&sr.ResponseError{StatusCode: 401}, true},
		{&sr.ResponseError{StatusCode: 404, ErrorCode: 404}, true},
		{&sr.ResponseError{StatusCode: 408}, false},
		{&sr.ResponseError{StatusCode: 429}, false},
		{&sr.ResponseError{StatusCode: 500, ErrorCode: 50001}, false},
		{&sr.ResponseError{StatusCode: 503}, false},
		{context.DeadlineExceeded, false},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
	} {
		re, refused := RegistrationRefused(c.err)
		if refused != c.refused || (refused && re == nil) {
			t.Errorf("%v: refused %v (%v), want %v", c.err, refused, re, c.refused)
		}
	}
}
