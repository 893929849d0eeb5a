// Package bindaddr checks the listen addresses the commands take as flags,
// so that one no listener could bind is refused before anything starts.
package bindaddr

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Check refuses addr unless it is HOST:PORT (HOST empty for every
// interface) with a numeric port from 0 to 65535, or one of off, the values
// that turn the endpoint off. flag names the flag in the error.
func Check(flag, addr string, off ...string) error {
	if slices.Contains(off, addr) {
		return nil
	}
	want := "want HOST:PORT with a port from 0 to 65535"
	if len(off) > 0 {
		quoted := make([]string, len(off))
		for i, v := range off {
			quoted[i] = strconv.Quote(v)
		}
		want += ", or " + strings.Join(quoted, " or ") + " to turn it off"
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %s", flag, addr, want)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%s %q: port %q: %s", flag, addr, port, want)
	}
	return nil
}
