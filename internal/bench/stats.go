package bench

import (
	"math"
	"slices"
)

// Summary describes a sample of durations or amounts.
type Summary struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Summarize computes the summary of values. Percentiles use the nearest-rank
// method: the reported value is one that was observed, never interpolated.
func Summarize(values []float64) Summary {
	if len(values) == 0 {
		return Summary{}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	return Summary{
		N:    len(s),
		Min:  s[0],
		Mean: sum / float64(len(s)),
		P50:  percentileSorted(s, 50),
		P90:  percentileSorted(s, 90),
		P99:  percentileSorted(s, 99),
		Max:  s[len(s)-1],
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// values, or 0 for no values.
func Percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return percentileSorted(s, p)
}

func percentileSorted(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Stat returns the named statistic ("p50", "p90", "p99", "max", "min",
// "mean") and whether the name is known.
func (s Summary) Stat(name string) (float64, bool) {
	switch name {
	case "p50":
		return s.P50, true
	case "p90":
		return s.P90, true
	case "p99":
		return s.P99, true
	case "max":
		return s.Max, true
	case "min":
		return s.Min, true
	case "mean":
		return s.Mean, true
	}
	return 0, false
}
