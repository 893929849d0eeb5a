package bench

import "testing"

func TestSummarize(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100..1, unsorted on purpose
	}
	cases := map[string]struct {
		in   []float64
		want Summary
	}{
		"empty":  {in: nil, want: Summary{}},
		"single": {in: []float64{2.5}, want: Summary{N: 1, Min: 2.5, Mean: 2.5, P50: 2.5, P90: 2.5, P99: 2.5, Max: 2.5}},
		"three runs": {in: []float64{3, 1, 2},
			want: Summary{N: 3, Min: 1, Mean: 2, P50: 2, P90: 3, P99: 3, Max: 3}},
		"one to hundred": {in: hundred,
			want: Summary{N: 100, Min: 1, Mean: 50.5, P50: 50, P90: 90, P99: 99, Max: 100}},
		"four": {in: []float64{4, 1, 3, 2},
			want: Summary{N: 4, Min: 1, Mean: 2.5, P50: 2, P90: 4, P99: 4, Max: 4}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Summarize(tc.in); got != tc.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("input reordered: %v", in)
	}
}

func TestPercentile(t *testing.T) {
	cases := map[string]struct {
		in   []float64
		p    float64
		want float64
	}{
		"empty":         {in: nil, p: 50, want: 0},
		"p0 is the min": {in: []float64{5, 7}, p: 0, want: 5},
		"p50 of two":    {in: []float64{7, 5}, p: 50, want: 5},
		"p51 of two":    {in: []float64{7, 5}, p: 51, want: 7},
		"p100":          {in: []float64{7, 5, 9}, p: 100, want: 9},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.in, tc.p, got, tc.want)
			}
		})
	}
}
