package window

import "math"

// Float sums are exact: the float values of a sum or avg are kept as
// Shewchuk's non-overlapping partials (as Python's math.fsum), whose exact
// sum is the sum of every value added, and the result is that sum rounded
// once. A result therefore does not depend on the order records arrive
// in, which a repartition topic sets by timing; a plain float64 running
// sum would differ in its last bits between two runs of the same input.

// fsumAdd adds x to the partials p, in place. The partials stay
// non-overlapping and in increasing magnitude. Non-finite values make
// non-finite partials (see finite).
func fsumAdd(p []float64, x float64) []float64 {
	i := 0
	for _, y := range p {
		if math.Abs(x) < math.Abs(y) {
			x, y = y, x
		}
		hi := x + y
		lo := y - (hi - x)
		if lo != 0 {
			p[i] = lo
			i++
		}
		x = hi
	}
	return append(p[:i], x)
}

// fsumRound is the exact sum of the partials rounded to the nearest
// float64, ties to even.
func fsumRound(p []float64) float64 {
	n := len(p)
	if n == 0 {
		return 0
	}
	n--
	hi, lo := p[n], 0.0
	for n > 0 {
		x := hi
		n--
		y := p[n]
		hi = x + y
		lo = y - (hi - x)
		if lo != 0 {
			break
		}
	}
	// hi + lo is exact: when lo is half an ulp of hi and the partials
	// below push the same way, the exact sum is past the tie: round away.
	if n > 0 && (lo < 0 && p[n-1] < 0 || lo > 0 && p[n-1] > 0) {
		y := lo * 2
		x := hi + y
		if x-hi == y {
			hi = x
		}
	}
	return hi
}

func finite(p []float64) bool {
	for _, x := range p {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
	}
	return true
}

// addNum adds a number to a Sum or Avg: integers exactly in num while
// int64 holds them, everything else to the float partials. ok is false
// when the sum would not be finite.
func (st *aggState) addNum(v value) bool {
	if v.k == vInt {
		if st.num.k == vNone {
			st.num = v
			return true
		}
		if s := st.num.i + v.i; (s > st.num.i) == (v.i > 0) {
			st.num.i = s
			return true
		}
	}
	st.fp = fsumAdd(st.fp, v.float())
	return finite(st.fp) && !math.IsInf(st.sum().f, 0)
}

// sum is the current sum: the integer part alone while there is no float
// part, else both rounded once.
func (st *aggState) sum() value {
	if len(st.fp) == 0 {
		return st.num
	}
	p := st.fp
	if st.num.k == vInt {
		// A copy to add the integer part to; on the stack while the
		// partials are few (they rarely pass three).
		var buf [16]float64
		p = fsumAdd(append(buf[:0], p...), float64(st.num.i))
	}
	return value{k: vFloat, f: fsumRound(p)}
}
