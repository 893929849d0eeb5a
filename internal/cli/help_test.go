package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// controlPlaneFlagNames name the control plane in every command that has
// them; memberFlagNames a member cluster.
var (
	controlPlaneFlagNames = []string{flagKubeconfig, flagContext, flagControlPlaneKubeconfig, flagControlPlaneContext}
	memberFlagNames       = []string{flagClusterKubeconfig, flagClusterContext}
)

// allCommands returns every command under root, root included.
func allCommands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		out = append(out, allCommands(c)...)
	}
	return out
}

func ownFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}

// Every cluster flag of every command says which cluster it names and its
// default, and the control plane answers to the same four names everywhere.
func TestClusterFlagsSayWhichCluster(t *testing.T) {
	for _, cmd := range allCommands(NewRootCommand()) {
		t.Run(cmd.CommandPath(), func(t *testing.T) {
			var cpFlags int
			for _, name := range controlPlaneFlagNames {
				f := ownFlag(cmd, name)
				if f == nil {
					continue
				}
				cpFlags++
				if !strings.Contains(f.Usage, "control plane") || strings.Contains(strings.ToLower(f.Usage), "member cluster") {
					t.Errorf("--%s: %q does not say it names the control plane", name, f.Usage)
				}
				switch name {
				case flagKubeconfig, flagContext:
					if !strings.Contains(f.Usage, "default:") {
						t.Errorf("--%s: %q does not state its default", name, f.Usage)
					}
				default:
					if want := "Same as --" + strings.TrimPrefix(name, "control-plane-"); !strings.HasPrefix(f.Usage, want) {
						t.Errorf("--%s: %q does not say it is %s", name, f.Usage, want)
					}
				}
			}
			if cpFlags != 0 && cpFlags != len(controlPlaneFlagNames) {
				t.Errorf("has %d of the control plane's flags %v: all or none", cpFlags, controlPlaneFlagNames)
			}
			var memberFlags int
			for _, name := range memberFlagNames {
				f := ownFlag(cmd, name)
				if f == nil {
					continue
				}
				memberFlags++
				if !strings.Contains(f.Usage, "MEMBER cluster") || !strings.Contains(f.Usage, "default") {
					t.Errorf("--%s: %q does not say it names a member cluster, and its default", name, f.Usage)
				}
			}
			if memberFlags != 0 && (memberFlags != len(memberFlagNames) || cpFlags == 0) {
				t.Errorf("has %d of the member's flags %v and %d of the control plane's: a command contacting a member has both, and all of each", memberFlags, memberFlagNames, cpFlags)
			}
		})
	}
}

// A command given a cluster flag it does not take says which cluster it
// works on, instead of only "unknown flag".
func TestCommandsExplainClusterFlagsTheyDoNotTake(t *testing.T) {
	for _, cmd := range allCommands(NewRootCommand()) {
		if !cmd.Runnable() {
			continue
		}
		path := strings.Fields(cmd.CommandPath())[1:]
		for _, name := range append(append([]string{}, controlPlaneFlagNames...), memberFlagNames...) {
			if ownFlag(cmd, name) != nil {
				continue
			}
			t.Run(cmd.CommandPath()+" --"+name, func(t *testing.T) {
				_, err := execute(NewRootCommand(), append(append([]string{}, path...), "--"+name, "x")...)
				if err == nil {
					t.Fatalf("accepted --%s", name)
				}
				want := "unknown flag: --" + name + ": " + cmd.CommandPath() + " "
				if !strings.HasPrefix(err.Error(), want) {
					t.Errorf("error = %q, want it to start with %q and say which cluster the command works on", err, want)
				}
			})
		}
	}
}

// `lifeboat --help` states the rule once, with every flag and default.
func TestRootHelpStatesTheKubeconfigRule(t *testing.T) {
	out, err := execute(NewRootCommand(), "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--kubeconfig, --context", "the Lifeboat control plane", "$KUBECONFIG, else ~/.kube/config",
		"--control-plane-kubeconfig", "--cluster-kubeconfig", "a MEMBER cluster", "join, unjoin --cleanup-member", "--state-dir", "DIR/kubeconfig"} {
		if !strings.Contains(out, want) {
			t.Errorf("lifeboat --help lacks %q:\n%s", want, out)
		}
	}
}

// pflag takes a backquoted word in a flag's usage for the name of its value
// (`--host make host-deps` in the help): no usage has one.
func TestFlagUsagesHaveNoBackquotes(t *testing.T) {
	for _, cmd := range allCommands(NewRootCommand()) {
		for _, fs := range []*pflag.FlagSet{cmd.LocalFlags(), cmd.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if strings.Contains(f.Usage, "`") {
					t.Errorf("%s --%s: usage %q has a backquote", cmd.CommandPath(), f.Name, f.Usage)
				}
			})
		}
	}
}

// A subcommand a group does not have fails, naming it (and the closest one),
// as an unknown top-level command does; the group alone prints its help.
func TestUnknownSubcommandsFail(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown token subcommand": {[]string{"token", "revoke"}, `unknown command "revoke" for "lifeboat token"`},
		"misspelt token create":    {[]string{"token", "creat"}, `did you mean "create"?`},
		"unknown env subcommand":   {[]string{"env", "bogus"}, `unknown command "bogus" for "lifeboat env"`},
		"the group alone":          {[]string{"token"}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := execute(NewRootCommand(), tc.args...)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Execute = %v, want its help", err)
			case tc.want == "" && !strings.Contains(out, "Available Commands"):
				t.Fatalf("no help printed:\n%s", out)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Execute = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A cluster flag given to a group names the commands of the group that
// take it.
func TestGroupNamesItsCommandsThatTakeTheFlag(t *testing.T) {
	_, err := execute(NewRootCommand(), "token", "--kubeconfig", "x")
	if err == nil || !strings.Contains(err.Error(), "lifeboat token only groups commands; give --kubeconfig to one of them: lifeboat token create, lifeboat token delete, lifeboat token list") {
		t.Errorf("token --kubeconfig: %v", err)
	}
	_, err = execute(NewRootCommand(), "env", "--kubeconfig", "x")
	if err == nil || !strings.Contains(err.Error(), "works on the local environment in --state-dir") {
		t.Errorf("env --kubeconfig: %v", err)
	}
}
