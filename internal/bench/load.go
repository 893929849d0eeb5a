package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// MachineLoad is what the whole machine did while the bench ran, so that
// a report says whether its figures were taken on a machine busy with
// something else or short of memory for the programs' code: times
// measured on two machines compare only when these are alike.
type MachineLoad struct {
	// Seconds is how long the bench ran.
	Seconds float64 `json:"seconds"`
	// BusyShare is the share of all CPU time not idle (or waiting for
	// I/O), KernelShare the share spent in the kernel (system, interrupts)
	// and StealShare the share a hypervisor took for other guests.
	BusyShare   float64 `json:"busyShare"`
	KernelShare float64 `json:"kernelShare"`
	StealShare  float64 `json:"stealShare"`
	// FileRefaultsPerSecond are pages of files (programs' code among them)
	// read back soon after the kernel dropped them: a machine that
	// reclaims memory it thinks cold refaults thousands a second, and
	// every process runs slower for it.
	FileRefaultsPerSecond float64 `json:"fileRefaultsPerSecond"`
}

// loadSample is the machine's counters at one moment.
type loadSample struct {
	at time.Time
	// cpu are /proc/stat's aggregate "cpu" times, in USER_HZ ticks:
	// user, nice, system, idle, iowait, irq, softirq, steal.
	cpu [8]uint64
	// refaults is /proc/vmstat's workingset_refault_file.
	refaults uint64
}

// readLoad samples the machine's counters; ok is false when /proc does not
// have them (not Linux).
func readLoad(now time.Time) (loadSample, bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return loadSample{}, false
	}
	vmstat, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return loadSample{}, false
	}
	s := loadSample{at: now}
	if s.cpu, err = parseProcStatCPU(stat); err != nil {
		return loadSample{}, false
	}
	s.refaults = parseVMStat(vmstat, "workingset_refault_file")
	return s, true
}

// parseProcStatCPU reads the aggregate "cpu" line of /proc/stat.
func parseProcStatCPU(data []byte) ([8]uint64, error) {
	var out [8]uint64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 9 {
			return out, fmt.Errorf("/proc/stat: %d fields on the cpu line, want at least 9", len(f))
		}
		for i := range out {
			v, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return out, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			out[i] = v
		}
		return out, nil
	}
	return out, fmt.Errorf("/proc/stat: no cpu line")
}

// parseVMStat returns the named counter of /proc/vmstat, 0 when absent.
func parseVMStat(data []byte, name string) uint64 {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, _ := strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
			return v
		}
	}
	return 0
}

// loadBetween is what the machine did from a to b; nil when nothing can be
// said (no time passed, no CPU time counted, or counters that went back).
func loadBetween(a, b loadSample) *MachineLoad {
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 || b.refaults < a.refaults {
		return nil
	}
	var d [8]float64
	var total float64
	for i := range d {
		if b.cpu[i] < a.cpu[i] {
			return nil
		}
		d[i] = float64(b.cpu[i] - a.cpu[i])
		total += d[i]
	}
	if total == 0 {
		return nil
	}
	const user, nice, system, idle, iowait, irq, softirq, steal = 0, 1, 2, 3, 4, 5, 6, 7
	return &MachineLoad{
		Seconds:               secs,
		BusyShare:             (total - d[idle] - d[iowait]) / total,
		KernelShare:           (d[system] + d[irq] + d[softirq]) / total,
		StealShare:            d[steal] / total,
		FileRefaultsPerSecond: float64(b.refaults-a.refaults) / secs,
	}
}

// String is the load for the report's machine line.
func (l *MachineLoad) String() string {
	return fmt.Sprintf("while the bench ran, the machine's CPUs were %.0f %% busy, %.0f %% in the kernel, %.0f %% taken by the hypervisor, and %.0f pages of files were read back a second after being dropped",
		100*l.BusyShare, 100*l.KernelShare, 100*l.StealShare, l.FileRefaultsPerSecond)
}
