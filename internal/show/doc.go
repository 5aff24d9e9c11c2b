// Package show renders record keys and values for people: `router tail`,
// `router redrive --dry-run` and the /ui samples.
//
// Any byte string is safe to hand it: JSON is pretty-printed, other UTF-8
// text is escaped (control characters and invisible runes quoted), binary
// is shown as hex, and everything is truncated to a bound. It never
// panics and never returns invalid UTF-8.
package show
