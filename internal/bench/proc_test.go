package bench

import (
	"os"
	"strings"
	"testing"
)

func TestParseRSS(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    uint64
		wantErr bool
	}{
		"typical": {in: "Name:\tlifeboat\nVmPeak:\t  900000 kB\nVmRSS:\t   61440 kB\nRssAnon:\t 40000 kB\n", want: 61440 * 1024},
		"missing": {in: "Name:\tzombie\nState:\tZ (zombie)\n", wantErr: true},
		"garbled": {in: "VmRSS:\t12x kB\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseRSS([]byte(tc.in))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseRSS = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseCPUSeconds(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    float64
		wantErr bool
	}{
		"typical": {in: "4242 (lifeboat) S 1 4242 4242 0 -1 4194560 9000 0 0 0 1234 566 0 0 20 0 12 0 99999 0 0",
			want: 18.0},
		"name with spaces and parens": {in: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 100 50 0 0 20 0 1 0 5 0 0", want: 1.5},
		"truncated":                   {in: "7 (x) R 1 2", wantErr: true},
		"no name":                     {in: "garbage", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseCPUSeconds([]byte(tc.in))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseCPUSeconds = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestReadProcSelf(t *testing.T) {
	s, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSBytes == 0 {
		t.Errorf("own RSS read as 0")
	}
}

func TestParseMemTotal(t *testing.T) {
	if got := parseMemTotal([]byte("MemTotal:       24576000 kB\nMemFree: 1 kB\n")); got != 24576000*1024 {
		t.Errorf("parseMemTotal = %d", got)
	}
}

// TestSampleProcessesSaysAProcessIsGone: a measured process that exited
// (or was restarted under another PID) is named as gone, not reported
// as a file /proc lacks.
func TestSampleProcessesSaysAProcessIsGone(t *testing.T) {
	const gone = 1 << 30 // above any Linux pid_max
	b := &Bench{Options: Options{Controllers: map[string]int{"lifeboat-controller-manager": gone}}}
	_, err := b.sampleProcesses()
	if err == nil || !strings.Contains(err.Error(), "lifeboat-controller-manager (PID 1073741824) is no longer running") {
		t.Errorf("sampleProcesses = %v, want it to say the controller manager is gone", err)
	}
}
