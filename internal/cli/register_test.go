package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
)

// register's --timeout 0 waits the default time, not without a limit (as
// init's --timeout 0 does): the help says so, and the options do it.
func TestRegisterTimeoutZeroIsTheDefault(t *testing.T) {
	f := newRegisterCommand().Flags().Lookup("timeout")
	if !strings.Contains(f.Usage, "(0: the default)") || f.DefValue != bootstrap.DefaultRegisterTimeout.String() {
		t.Errorf("--timeout: %q (default %s) does not say that 0 is the default %s", f.Usage, f.DefValue, bootstrap.DefaultRegisterTimeout)
	}
	o := bootstrap.RegisterOptions{
		ControlPlaneURL: "https://10.0.0.5:6443",
		Token:           "abcdef.0123456789abcdef",
		CAHashes:        []string{"sha256:" + strings.Repeat("ab", 32)},
		ClusterName:     "member1",
		KubeconfigPath:  filepath.Join(t.TempDir(), "agent.kubeconfig"),
	}
	if _, err := o.Validate(); err != nil || o.Timeout != bootstrap.DefaultRegisterTimeout {
		t.Errorf("--timeout 0: Validate = %v, timeout %s; want the default %s", err, o.Timeout, bootstrap.DefaultRegisterTimeout)
	}
}
