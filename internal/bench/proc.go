package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// ProcSample is a process's resident memory and CPU time so far.
type ProcSample struct {
	RSSBytes   uint64
	CPUSeconds float64
}

// ReadProc samples /proc/PID.
func ReadProc(pid int) (ProcSample, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcSample{}, fmt.Errorf("reading /proc/%d/status: %w", pid, err)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcSample{}, fmt.Errorf("reading /proc/%d/stat: %w", pid, err)
	}
	rss, err := ParseRSS(status)
	if err != nil {
		return ProcSample{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	cpu, err := ParseCPUSeconds(stat)
	if err != nil {
		return ProcSample{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	return ProcSample{RSSBytes: rss, CPUSeconds: cpu}, nil
}

// ParseRSS reads VmRSS from the text of /proc/PID/status.
func ParseRSS(status []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing VmRSS %q: %w", f[0], err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no VmRSS in /proc status (a zombie?)")
}

// ParseCPUSeconds reads utime + stime from the text of /proc/PID/stat.
func ParseCPUSeconds(stat []byte) (float64, error) {
	s := string(stat)
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after it start after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat: %d fields", len(f))
	}
	utime, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing utime: %w", err)
	}
	stime, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing stime: %w", err)
	}
	return float64(utime+stime) / clockTicks, nil
}

// ReadMachine describes this machine for the report.
func ReadMachine() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version()}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemoryBytes = parseMemTotal(data)
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = parseCPUModel(data)
	}
	return m
}

// parseCPUModel returns the first "model name" of /proc/cpuinfo; empty
// when there is none (some architectures name it otherwise).
func parseCPUModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

func parseMemTotal(meminfo []byte) uint64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
