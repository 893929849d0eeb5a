package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

const procStat = `cpu  1000 0 400 8000 100 20 80 400 0 0
cpu0 500 0 200 4000 50 10 40 200 0 0
intr 12345
`

func TestParseProcStatCPU(t *testing.T) {
	got, err := parseProcStatCPU([]byte(procStat))
	if err != nil {
		t.Fatal(err)
	}
	if want := [8]uint64{1000, 0, 400, 8000, 100, 20, 80, 400}; got != want {
		t.Errorf("parseProcStatCPU = %v, want %v", got, want)
	}
	for name, data := range map[string]string{
		"no cpu line":       "cpu0 1 2 3 4 5 6 7 8\n",
		"too few fields":    "cpu 1 2 3\n",
		"not a number":      "cpu 1 2 x 4 5 6 7 8\n",
		"a negative number": "cpu 1 2 -3 4 5 6 7 8\n",
	} {
		if _, err := parseProcStatCPU([]byte(data)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseVMStat(t *testing.T) {
	data := []byte("workingset_refault_anon 7\nworkingset_refault_file 7582053\npgmajfault 12\n")
	if got := parseVMStat(data, "workingset_refault_file"); got != 7582053 {
		t.Errorf("workingset_refault_file = %d, want 7582053", got)
	}
	if got := parseVMStat(data, "workingset_refault"); got != 0 {
		t.Errorf("a prefix of a name = %d, want 0 (absent)", got)
	}
}

func TestLoadBetween(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := loadSample{at: t0, cpu: [8]uint64{1000, 0, 400, 8000, 100, 20, 80, 400}, refaults: 1000}
	// 1,000 ticks pass: 300 user, 200 system, 50 softirq, 50 steal, 300
	// idle, 100 iowait; 5,000 file pages refaulted in 10 s.
	b := loadSample{at: t0.Add(10 * time.Second), cpu: [8]uint64{1300, 0, 600, 8300, 200, 20, 130, 450}, refaults: 6000}
	got := loadBetween(a, b)
	if got == nil {
		t.Fatal("loadBetween = nil")
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	if !near(got.Seconds, 10) || !near(got.BusyShare, 0.6) || !near(got.KernelShare, 0.25) || !near(got.StealShare, 0.05) || !near(got.FileRefaultsPerSecond, 500) {
		t.Errorf("loadBetween = %+v, want 10 s, busy 0.6, kernel 0.25, steal 0.05, 500 refaults/s", got)
	}
	for name, end := range map[string]loadSample{
		"no time passed":           {at: t0, cpu: b.cpu, refaults: b.refaults},
		"no CPU time counted":      {at: b.at, cpu: a.cpu, refaults: b.refaults},
		"a counter went back":      {at: b.at, cpu: [8]uint64{900, 0, 600, 8300, 200, 20, 130, 450}, refaults: b.refaults},
		"refaults went back":       {at: b.at, cpu: b.cpu, refaults: 10},
		"the end before the start": {at: t0.Add(-time.Second), cpu: b.cpu, refaults: b.refaults},
	} {
		if got := loadBetween(a, end); got != nil {
			t.Errorf("%s: loadBetween = %+v, want nil", name, got)
		}
	}
}

func TestParseCPUModel(t *testing.T) {
	data := []byte("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2096.010\n\nprocessor\t: 1\nmodel name\t: other\n")
	if got := parseCPUModel(data); got != "AMD EPYC" {
		t.Errorf("parseCPUModel = %q, want the first processor's, AMD EPYC", got)
	}
	if got := parseCPUModel([]byte("processor\t: 0\nCPU implementer\t: 0x41\n")); got != "" {
		t.Errorf("parseCPUModel without a model name = %q, want empty", got)
	}
}

func TestMarkdownStatesTheMachinesLoad(t *testing.T) {
	rep := sampleReport()
	rep.Machine.CPUModel = "AMD EPYC"
	rep.Machine.Load = &MachineLoad{Seconds: 90, BusyShare: 0.97, KernelShare: 0.28, StealShare: 0.01, FileRefaultsPerSecond: 1234}
	var buf bytes.Buffer
	rep.Markdown(&buf)
	want := "Machine: 2 CPUs (AMD EPYC), 24.0 GiB memory, linux/amd64 kernel 6.1, go1.26; while the bench ran, the machine's CPUs were 97 % busy, 28 % in the kernel, 1 % taken by the hypervisor, and 1234 pages of files were read back a second after being dropped.\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("report does not hold\n%s\ngot:\n%s", want, buf.String())
	}
	rep.Machine.Load, rep.Machine.CPUModel = nil, ""
	buf.Reset()
	rep.Markdown(&buf)
	if !strings.Contains(buf.String(), "Machine: 2 CPUs, 24.0 GiB memory, linux/amd64 kernel 6.1, go1.26.\n") {
		t.Errorf("without a load the machine line ends after the Go version:\n%s", buf.String())
	}
}
