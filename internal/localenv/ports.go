package localenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// freePort finds a free loopback port for a component to listen on.
//
// Between choosing a port and the component binding it, something else
// may take it. Two things did, in practice:
//   - the kernel: a port it hands out for ":0" is also one it hands out as
//     the source port of outgoing connections, which the many clients of a
//     running environment open all the time. freePort therefore chooses
//     below Linux's ephemeral range (32768-60999 by default) and the
//     NodePort range (30000-32767);
//   - another environment starting at the same time (the e2e suite starts
//     several): every choice is recorded, under a lock, in a file shared by
//     the machine's lifeboat processes (portRegistryPath), and a port chosen
//     in the last portHold is not chosen again.
//
// The kernel's own choice is the fallback. A component that still finds its
// port taken fails to start and says so in its log.
func freePort() (int, error) {
	if port, err := reservePort(portRegistryPath(), time.Now()); err == nil {
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// The ports freePort chooses from: [freePortLow, freePortHigh).
const (
	freePortLow  = 20000
	freePortHigh = 30000
)

// portHold is how long a chosen port is not chosen again: longer than
// any start takes to bind it.
const portHold = 10 * time.Minute

// portRegistryPath is the machine-wide record of recently chosen ports.
func portRegistryPath() string {
	return filepath.Join(os.TempDir(), "lifeboat-ports-"+strconv.Itoa(os.Getuid())+".json")
}

// reservePort chooses a port that binds now and was not chosen in the last
// portHold by any process using the registry at path, and records it.
func reservePort(path string, now time.Time) (int, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, err
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close anyway
	chosen := map[string]time.Time{}
	if data, err := os.ReadFile(path); err == nil && len(data) > 0 {
		// A registry that does not decode is started afresh.
		_ = json.Unmarshal(data, &chosen)
	}
	for p, at := range chosen {
		if now.Sub(at) > portHold || at.After(now.Add(time.Minute)) {
			delete(chosen, p)
		}
	}
	for range 50 {
		port := freePortLow + rand.IntN(freePortHigh-freePortLow)
		key := strconv.Itoa(port)
		if _, taken := chosen[key]; taken {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+key)
		if err != nil {
			continue
		}
		l.Close()
		chosen[key] = now
		data, err := json.Marshal(chosen)
		if err != nil {
			return 0, err
		}
		if err := f.Truncate(0); err != nil {
			return 0, err
		}
		if _, err := f.WriteAt(data, 0); err != nil {
			return 0, err
		}
		return port, nil
	}
	return 0, errors.New("no free port below the ephemeral range")
}
