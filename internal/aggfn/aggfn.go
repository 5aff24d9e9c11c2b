package aggfn

import "slices"

// The aggregate functions, as a topology names them.
const (
	Count         = "count"
	Sum           = "sum"
	Min           = "min"
	Max           = "max"
	Avg           = "avg"
	First         = "first"
	Last          = "last"
	DistinctCount = "distinct_count"
)

// Names lists every function in the order of the window operator's
// AggKind (Count is AggKind 1) and of messages.
var Names = []string{Count, Sum, Min, Max, Avg, First, Last, DistinctCount}

// Valid reports whether name is an aggregate function.
func Valid(name string) bool { return slices.Contains(Names, name) }
