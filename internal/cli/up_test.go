package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestUpHelpNamesKyverno(t *testing.T) {
	cmd := newUpCommand()
	f := cmd.Flags().Lookup("with-kyverno")
	if f == nil || f.DefValue != "false" {
		t.Fatalf("up has no --with-kyverno flag defaulting to false: %+v", f)
	}
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--with-kyverno", "examples/flink/kyverno-clusterpolicy.yaml", "memberN-kyverno"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("up --help lacks %q:\n%s", want, out.String())
		}
	}
}
