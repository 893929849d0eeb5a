package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
)

func TestPrintTokenCreatedGivesTheRegisterCommand(t *testing.T) {
	var out bytes.Buffer
	res := bootstrap.CreatedToken{
		Token:   bootstrap.Token{ID: "abcdef", Secret: "0123456789abcdef"},
		Expires: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC),
		Changes: []string{"Cluster member4 created"},
	}
	printTokenCreated(&out, "member4", "https://10.0.0.5:6443", []string{"sha256:aa"}, res)
	for _, want := range []string{
		"Bootstrap token abcdef.0123456789abcdef for cluster member4, accepted until 2026-03-02T12:00:00Z.",
		"  Cluster member4 created\n",
		"  lifeboat register https://10.0.0.5:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:aa --cluster-name member4 --agent-kubeconfig lifeboat-agent-member4.kubeconfig\n",
		"  lifeboat agent --cluster-name member4 --kubeconfig lifeboat-agent-member4.kubeconfig\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	printTokenCreated(&out, "member4", "https://10.0.0.5:6443", nil, res)
	if !strings.Contains(out.String(), "--ca-file CA_FILE") {
		t.Errorf("without a CA in the kubeconfig the command lacks --ca-file:\n%s", out.String())
	}
}

func TestPrintTokens(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	printTokens(&out, []bootstrap.TokenInfo{
		{ID: "abcdef", Cluster: "member1", Expires: now.Add(90 * time.Minute)},
		{ID: "zzzzzz", Cluster: "member2", Expires: now.Add(-time.Minute)},
	}, now)
	for _, want := range []string{"ID", "abcdef  member1  2026-03-01T13:30:00Z (in 1h30m0s)", "zzzzzz  member2  2026-03-01T11:59:00Z (expired)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// What can be refused without a control plane is refused before reaching
// for one: the kubeconfig below does not exist.
func TestTokenAndRegisterRefuseEarly(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"a token that never expires":               {args: []string{"token", "create", "--cluster", "member4", "--ttl", "0", "--kubeconfig", "/nonexistent"}, want: "must expire"},
		"a cluster name that is no namespace name": {args: []string{"token", "create", "--cluster", "Member4", "--kubeconfig", "/nonexistent"}, want: "karmada-es-Member4"},
		"a malformed token ID":                     {args: []string{"token", "delete", "ABC", "--kubeconfig", "/nonexistent"}, want: "not a bootstrap token ID"},
		"IDs and --cluster":                        {args: []string{"token", "delete", "abcdef", "--cluster", "m"}, want: "not both"},
		"a malformed bootstrap token": {args: []string{"register", "https://127.0.0.1:1", "--token", "abcdef-0123456789abcdef",
			"--discovery-token-ca-cert-hash", "sha256:" + strings.Repeat("0", 64), "--cluster-name", "member4", "--agent-kubeconfig", "/nonexistent/x"}, want: "malformed bootstrap token"},
		"no pin": {args: []string{"register", "https://127.0.0.1:1", "--token", "abcdef.0123456789abcdef",
			"--cluster-name", "member4", "--agent-kubeconfig", "/nonexistent/x"}, want: "--discovery-token-ca-cert-hash"},
		"register takes no --kubeconfig": {args: []string{"register", "https://127.0.0.1:1", "--kubeconfig", "x"}, want: "with a bootstrap token"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := execute(NewRootCommand(), tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
