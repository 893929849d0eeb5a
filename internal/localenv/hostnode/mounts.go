package hostnode

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// mountPointsUnder lists the mount points in a mountinfo listing
// (/proc/self/mountinfo) that are at or below one of the prefixes,
// deepest first, so that they can be unmounted in that order.
func mountPointsUnder(mountinfo io.Reader, prefixes []string) ([]string, error) {
	var found []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		for _, p := range prefixes {
			p = filepath.Clean(p)
			if (mp == p || strings.HasPrefix(mp, p+"/")) && !seen[mp] {
				seen[mp] = true
				found = append(found, mp)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading mountinfo: %w", err)
	}
	sort.Slice(found, func(i, j int) bool {
		di, dj := strings.Count(found[i], "/"), strings.Count(found[j], "/")
		if di != dj {
			return di > dj
		}
		return found[i] > found[j]
	})
	return found, nil
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// UnmountUnder detaches every mount at or below the prefixes (containers'
// root filesystems, pods' shared memory and volumes that a stopped
// containerd or kubelet left behind), deepest first.
func UnmountUnder(prefixes ...string) error {
	// A point can carry several stacked mounts; each pass detaches the top.
	var last []string
	for range 5 {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return fmt.Errorf("listing mounts: %w", err)
		}
		points, err := mountPointsUnder(f, prefixes)
		f.Close()
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		last = points
		for _, mp := range points {
			_ = syscall.Unmount(mp, syscall.MNT_DETACH)
		}
	}
	return fmt.Errorf("still mounted after unmounting: %s", strings.Join(last, ", "))
}
