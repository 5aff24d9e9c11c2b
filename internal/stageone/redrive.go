package stageone

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/wire"
)

// isRedriven reports whether r carries a redrive mark.
func isRedriven(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == wire.HeaderRedriveOrigin {
			return true
		}
	}
	return false
}
