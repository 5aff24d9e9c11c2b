// Package redact hides named fields of JSON values before people see
// them: the /ui samples and the record values of /state under
// api.samples: redacted.
//
// A path is dot-separated field names; "*" matches any field or list
// element, a number matches that list index, and a list is crossed
// without naming an index (items.card matches the card of every item).
// It must never quote a hidden value anywhere, and never panics.
package redact
