package bench

import (
	"strings"
	"testing"
	"time"
)

func TestAppFailoverFigures(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	complete := appFailoverMarks{
		t0:           t0,
		downInMember: at(30),
		unhealthy:    at(80),
		evicted:      at(10_090),
		scheduled:    at(10_110),
		created:      at(10_160),
		upInMember:   at(10_260),
		healthy:      at(10_300),
	}
	// but is complete with change applied.
	but := func(change func(*appFailoverMarks)) appFailoverMarks {
		m := complete
		change(&m)
		return m
	}
	cases := map[string]struct {
		marks   appFailoverMarks
		want    map[string]float64
		missing []string
		err     string
		note    string
	}{
		"every step seen": {
			marks: complete,
			want: map[string]float64{
				FigAppDetect: 0.080, FigAppMemberDown: 0.030, FigAppEvict: 10.010,
				FigAppRecreate: 0.070, FigAppResched: 0.020, FigAppHealthy: 0.140,
				FigAppMemberUp: 0.100, FigAppTotal: 10.300, FigAppOverhead: 0.300,
				FigAppPipeline: 0.290,
				// 0.300 overhead − 0.030 and 0.100 in the members.
				FigAppControlPlane: 0.170,
			},
		},
		"the members' reports not seen: no split": {
			marks:   but(func(m *appFailoverMarks) { m.downInMember, m.upInMember = time.Time{}, time.Time{} }),
			want:    map[string]float64{FigAppOverhead: 0.300, FigAppHealthy: 0.140},
			missing: []string{FigAppMemberDown, FigAppMemberUp, FigAppControlPlane},
		},
		"evicted before the toleration": {
			marks: but(func(m *appFailoverMarks) { m.evicted = at(5_080) }),
			want:  map[string]float64{FigAppEvict: 5.000},
			note:  "evicted 5s after Unhealthy, before tolerationSeconds 10",
		},
		"no eviction seen": {
			marks:   but(func(m *appFailoverMarks) { m.evicted = time.Time{} }),
			want:    map[string]float64{FigAppOverhead: 0.300, FigAppControlPlane: 0.170},
			missing: []string{FigAppEvict, FigAppPipeline, FigAppRecreate, FigAppResched},
			err:     "eviction task seen false",
		},
		"no Healthy copy seen": {
			marks:   but(func(m *appFailoverMarks) { m.healthy = time.Time{} }),
			missing: []string{FigAppTotal, FigAppOverhead, FigAppControlPlane, FigAppHealthy, FigAppPipeline},
			err:     "not seen Healthy",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &RunResult{}
			err := tc.marks.add(r, 10*time.Second)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error = %v, want one containing %q", err, tc.err)
			}
			for id, want := range tc.want {
				vs := r.Values[id]
				if len(vs) != 1 {
					t.Errorf("%s: %d values, want 1", id, len(vs))
					continue
				}
				if d := vs[0].V - want; d > 1e-9 || d < -1e-9 {
					t.Errorf("%s = %.6f, want %.6f", id, vs[0].V, want)
				}
			}
			for _, id := range tc.missing {
				if vs := r.Values[id]; len(vs) != 0 {
					t.Errorf("%s = %v, want no value", id, vs)
				}
			}
			if got := strings.Join(r.Notes, "; "); got != tc.note {
				t.Errorf("notes = %q, want %q", got, tc.note)
			}
		})
	}
}
