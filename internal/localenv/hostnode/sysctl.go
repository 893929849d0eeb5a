package hostnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ChangedSysctls are the kernel settings the host cluster's parts change
// on the whole machine: the CNI bridge plugin turns on forwarding, the
// kubelet sets the panic, overcommit and key-quota values it wants. They
// are recorded before the node starts and put back when it stops.
var ChangedSysctls = []string{
	"net.ipv4.ip_forward",
	"vm.overcommit_memory",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
}

// sysctlPath is the /proc/sys file of a dotted key.
func sysctlPath(root, key string) string {
	return filepath.Join(root, filepath.FromSlash(strings.ReplaceAll(key, ".", "/")))
}

// ReadSysctls reads the current values of keys under root (/proc/sys).
// A key the kernel does not have is left out.
func ReadSysctls(root string, keys []string) (map[string]string, error) {
	values := map[string]string{}
	for _, k := range keys {
		data, err := os.ReadFile(sysctlPath(root, k))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", k, err)
		}
		values[k] = strings.TrimSpace(string(data))
	}
	return values, nil
}

// WriteSysctls writes values back under root, each that differs.
func WriteSysctls(root string, values map[string]string) error {
	var errs []error
	for k, v := range values {
		p := sysctlPath(root, k)
		now, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(now)) == v {
			continue
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s=%s: %w", k, v, err))
		}
	}
	return errors.Join(errs...)
}
