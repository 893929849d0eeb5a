package bindaddr

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		addr string
		off  []string
		want string // a part of the error; "" for none
	}{
		{addr: "127.0.0.1:8080"},
		{addr: ":10357"},
		{addr: "[::1]:0"},
		{addr: "0", off: []string{"0"}},
		{addr: "", off: []string{"", "0"}},
		{addr: "", off: []string{"0"}, want: `want HOST:PORT with a port from 0 to 65535, or "0" to turn it off`},
		{addr: "0", want: "want HOST:PORT"},
		{addr: ":99999", want: `port "99999"`},
		{addr: ":http", want: `port "http"`},
		{addr: "bogus", want: "want HOST:PORT"},
		{addr: ":-1", want: `port "-1"`},
	} {
		err := Check("--x", tc.addr, tc.off...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%q, off %q) = %v, want nil", tc.addr, tc.off, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%q, off %q) = %v, want an error with %q", tc.addr, tc.off, err, tc.want)
		}
	}
}
