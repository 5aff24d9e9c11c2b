package processor

import "github.com/twmb/franz-go/pkg/kgo"

// Headers `router redrive` sets on every record it re-injects. The router
// recognises a redriven record by HeaderRedriveOrigin, counts it
// (sidestream_records_redriven_total) and, like every input header, keeps
// the marks on whatever it writes for the record: route outputs, the
// repartitioned copy of a window route, and the dirty record if it fails
// again, so a record that loops back to dirty says how often it was
// redriven already.
const (
	// HeaderRedriveOrigin is topic/partition/offset of the side-route
	// record that was redriven: the record's identity in the ledger.
	HeaderRedriveOrigin = "sidestream.redrive.origin"
	// HeaderRedriveRun names the redrive run (one run, one id).
	HeaderRedriveRun = "sidestream.redrive.run"
	// HeaderRedriveReason is the reason the record had on its side route
	// (the dirty reason, or "late").
	HeaderRedriveReason = "sidestream.redrive.reason"
	// HeaderRedriveCount is how many times this record has been redriven,
	// this time included.
	HeaderRedriveCount = "sidestream.redrive.count"
	// HeaderRedriveAt is when it was redriven, epoch ms.
	HeaderRedriveAt = "sidestream.redrive.at"
)

// isRedriven reports whether r carries a redrive mark.
func isRedriven(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == HeaderRedriveOrigin {
			return true
		}
	}
	return false
}
