// Package membound holds the bounded-memory test: a router process fed
// 1,000,000 distinct keys under GOMEMLIMIT and a window state limit, whose
// peak RSS and overflow count the test checks from outside. It has no
// code of its own; it must never be imported.
package membound
