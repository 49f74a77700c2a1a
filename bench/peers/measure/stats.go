package measure

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the nearest-rank method:
// the smallest value such that at least p% of the values are ≤ it. It returns 0 for no values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Median returns the median of xs (the mean of the two middle values for an even count), 0 for
// none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
