package cli

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lifeboat-dev/lifeboat/internal/bench"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
)

// controllerComponent is the local environment's controller process.
const controllerComponent = localenv.ControllerManagerComponent

func newBenchCommand() *cobra.Command {
	opts := bench.DefaultOptions()
	var (
		cp                                        controlPlaneFlags
		stateDir, out                             string
		stopCmd, startCmd                         string
		memberContexts, controllerPIDs, extraPIDs []string
		targets                                   = true
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure propagation, application and cluster failover, and the controllers' footprint",
		Long: `Run the benchmark scenarios against a Karmada-compatible control plane and write
DIR/report.md and DIR/report.json (every raw value, p50/p90/p99/max per figure,
each run's own statistic and the spread between runs, the machine, versions and
flags). Timestamps come from watch events.

Scenarios (each run --runs times unless --scenario-runs says otherwise, in a fresh
namespace removed afterwards):
  propagation       -n Deployments created at once under one policy; also the
                    requests the control plane's API server answered per object
                    (its /metrics, which the bench's user must be allowed to
                    read), the CPU time of every process it can see from the
                    first create call to the last binding Healthy (the members'
                    own processes' part apart) and each controller's mean
                    work-queue wait
  app-failover      the seed's nginx: a member's node cordoned, the pods deleted;
                    the overhead is also split between the members' own
                    controllers and the control plane
  cluster-failover  --cluster-failover-n Deployments pinned to one member whose
                    API server is killed (and started again afterwards); also
                    the CPU time of every process it can see from the kill to
                    the last binding Healthy elsewhere (the members' part
                    apart), the control plane's
                    requests per binding moved, each controller's mean
                    work-queue wait (--controller-metrics-url), and the bindings
                    ever left without a Healthy copy apart from the failure
  failback          --failback-n Deployments with failback, their member's API
                    server killed and started again: the way back to it
  footprint         RSS and CPU time of the controller processes, idle CPU
                    (also at --steady-bindings bindings)

By default it measures the local environment in --state-dir: its kubeconfig
DIR/kubeconfig (the control plane is context "lifeboat", each member the context
named after it), "lifeboat env stop --kill" and "env start" for members, the
recorded controller PID. For another control plane give --kubeconfig and
--context (the control plane, as in every lifeboat command; the members are
contexts of the same kubeconfig, named after their Clusters unless
--member-context maps them), --member-stop-cmd and --member-start-cmd ({member}
is replaced by the member's name) and --controller-pids.`,
		Example: `  lifeboat bench --state-dir .lifeboat --out bench-results
  lifeboat bench --scenarios cluster-failover --cluster-failover-n 1000 --runs 1
  lifeboat bench --kubeconfig ~/.kube/karmada --context karmada-apiserver \
    --member-stop-cmd 'ssh {member} systemctl stop kube-apiserver' \
    --member-start-cmd 'ssh {member} systemctl start kube-apiserver' \
    --controller-pids karmada-controller-manager=4242,karmada-scheduler=4243`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The bench reports its own progress and failures; the
			// controller-runtime clients it uses stay quiet.
			ctrl.SetLogger(logr.Discard())
			// Refused before anything is loaded or connected; Run checks
			// again, with the member names.
			if err := opts.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ref, err := cp.ref()
			if err != nil {
				return err
			}
			kubeconfig, cpContext := ref.path, ref.context
			var env *localenv.State
			if kubeconfig == "" || cmd.Flags().Changed("state-dir") {
				s, err := localenv.Load(stateDir)
				if err != nil {
					return fmt.Errorf("%w (give --kubeconfig to measure another control plane)", err)
				}
				env = s
				if kubeconfig == "" {
					kubeconfig = s.KubeconfigPath()
					if cpContext == "" {
						cpContext = localenv.ControlPlaneName
					}
				}
			}
			contexts, err := bench.ParsePairs(memberContexts)
			if err != nil {
				return fmt.Errorf("--member-context %w", err)
			}
			e, err := bench.Connect(ctx, kubeconfig, cpContext, contexts)
			if err != nil {
				return err
			}
			b := &bench.Bench{Env: e, Options: opts, Progress: cmd.ErrOrStderr(), Versions: map[string]string{}}
			switch {
			case stopCmd != "" || startCmd != "":
				if stopCmd == "" || startCmd == "" {
					return fmt.Errorf("--member-stop-cmd and --member-start-cmd go together")
				}
				b.Members = bench.CommandControl{StopTemplate: stopCmd, StartTemplate: startCmd,
					Vars: map[string]string{"kubeconfig": kubeconfig}}
			case env != nil:
				b.Members = bench.LocalEnvControl{Dir: env.Dir}
			}
			if len(extraPIDs) > 0 {
				if b.Options.ExtraProcesses, err = bench.ParsePIDs(extraPIDs); err != nil {
					return fmt.Errorf("--extra-pids %w", err)
				}
			}
			b.Options.NoTargets = !targets
			if len(controllerPIDs) > 0 {
				if b.Options.Controllers, err = bench.ParsePIDs(controllerPIDs); err != nil {
					return fmt.Errorf("--controller-pids %w", err)
				}
			} else if env != nil {
				b.Options.Controllers = map[string]int{}
				for _, c := range env.Components {
					if c.Name == controllerComponent && c.Process.Alive() {
						b.Options.Controllers[c.Name] = c.Process.PID
					}
				}
			}
			if env != nil {
				b.Options.EnvProcesses = func() map[string]int { return envProcesses(env.Dir) }
			}
			if b.Options.ControllerMetricsURL == "" && env != nil {
				b.Options.ControllerMetricsURL = controllerMetricsURL(env)
			}
			if b.Options.ControllerMetricsURL == "none" {
				b.Options.ControllerMetricsURL = ""
			}
			if key, err := components.Key(); err == nil && env != nil {
				b.Versions["local-env-components"] = key
			}
			b.Options.Flags = map[string]string{}
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Name != "help" {
					b.Options.Flags[f.Name] = f.Value.String()
				}
			})
			b.Options.Flags["kubeconfig"], b.Options.Flags["context"] = kubeconfig, cpContext

			rep, err := b.Run(ctx)
			if rep != nil {
				if werr := rep.WriteFiles(out); werr != nil {
					return werr
				}
				fmt.Fprintln(cmd.ErrOrStderr())
				rep.Markdown(cmd.OutOrStdout())
				abs, _ := filepath.Abs(out)
				fmt.Fprintf(cmd.ErrOrStderr(), "\nReport written to %s/report.md and report.json\n", abs)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&stateDir, "state-dir", defaultStateDir, "Local environment to measure (its kubeconfig, member stop/start and controller PID).")
	cp.addWithUsage(f,
		"Kubeconfig of the control plane, whose contexts also reach the members (default: the local environment's, DIR/kubeconfig of --state-dir).",
		"Context of the control plane in that kubeconfig (default: \""+localenv.ControlPlaneName+"\" in the local environment's kubeconfig, else its current context).")
	f.StringArrayVar(&memberContexts, "member-context", nil, "CLUSTER=CONTEXT, in --kubeconfig, of a MEMBER whose context is not named after its Cluster (repeatable).")
	f.StringSliceVar(&opts.Scenarios, "scenarios", opts.Scenarios, "Scenarios to run: "+strings.Join(bench.AllScenarios, ", ")+".")
	f.IntVar(&opts.Runs, "runs", opts.Runs, "Runs of each scenario.")
	f.StringToIntVar(&opts.ScenarioRuns, "scenario-runs", nil, "Runs of some of the selected scenarios instead of --runs: SCENARIO=N, comma-separated (for example cluster-failover=1).")
	f.BoolVar(&targets, "targets", true, "Show Lifeboat's targets and whether they are met; --targets=false for a report on another control plane.")
	f.StringVar(&opts.PlaneVersion, "plane-version", "", "What is measured, for the report (for example \"karmada v1.16.0\"); Lifeboat's own build revision is recorded anyway.")
	f.IntVarP(&opts.N, "n", "n", opts.N, "Deployments of the propagation scenario (1 to 100000).")
	f.IntVar(&opts.ClusterFailoverN, "cluster-failover-n", opts.ClusterFailoverN, "Deployments pinned to the stopped member, 1 to 100000 (docs/performance.md also measures 1000 and 5000).")
	f.StringVar(&opts.ClusterFailoverMember, "cluster-failover-member", "", "Member whose API server cluster-failover and failback stop (default: each run the next member by name, so that none fails twice in a row and gets the flapping taint).")
	f.StringVar(&opts.PropagationMember, "propagation-member", "", "Pin the propagation scenario's Deployments to this member (default: the scheduler picks one member for each), e.g. to compare a Pull member with a Push one.")
	f.IntVar(&opts.FailbackN, "failback-n", opts.FailbackN, "Deployments of the failback scenario, 1 to 100000 (docs/performance.md also measures 1000).")
	f.DurationVar(&opts.FailbackWindow, "failback-window", opts.FailbackWindow, "The failback policy's stabilizationSeconds (whole seconds, at least 1s).")
	f.Int32Var(&opts.Toleration, "toleration-seconds", opts.Toleration, "app-failover's decisionConditions.tolerationSeconds, 0 to 2147483647.")
	f.StringVar(&stopCmd, "member-stop-cmd", "", "Shell command stopping a member's API server; {member} is its name, {kubeconfig} the kubeconfig.")
	f.StringVar(&startCmd, "member-start-cmd", "", "Shell command starting it again (returns once it serves).")
	f.StringSliceVar(&controllerPIDs, "controller-pids", nil, "Controller processes footprint measures and sums: NAME=PID or PID, comma-separated (default: the local environment's).")
	f.StringSliceVar(&extraPIDs, "extra-pids", nil, "More processes footprint reports each on its own but leaves out of the totals (a webhook, an aggregated API server): NAME=PID or PID, comma-separated.")
	f.DurationVar(&opts.IdleWindow, "idle-window", opts.IdleWindow, "How long footprint watches the controllers idle, at least "+bench.MinIdleWindow.String()+".")
	f.IntVar(&opts.SteadyBindings, "steady-bindings", 0, "Also measure footprint at this many bindings over the members (docs/performance.md measures 5000), idle from when the controllers are quiet after the rollout (at most 5m after it); 0 skips it, at most 100000.")
	f.DurationVar(&opts.Timeout, "timeout", opts.Timeout, "Bound of each wait in a run (longer for many objects).")
	f.StringVar(&opts.ControllerMetricsURL, "controller-metrics-url", "", "The controller manager's metrics endpoint, for failback's idle reconcile count and cluster-failover's work-queue notes (default: the local environment's; none skips them).")
	f.StringVar(&out, "out", "bench-results", "Directory for report.md and report.json.")
	return cmd
}

// controllerMetricsURL is the metrics endpoint of env's controller manager,
// from its --metrics-bind-address, or "".
// envProcesses are the local environment's running processes by component
// name, read afresh: a member started again runs under another PID.
func envProcesses(dir string) map[string]int {
	s, err := localenv.Load(dir)
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, c := range s.Components {
		if c.Process.Alive() {
			out[c.Name] = c.Process.PID
		}
	}
	return out
}

func controllerMetricsURL(env *localenv.State) string {
	for _, c := range env.Components {
		if c.Name != controllerComponent {
			continue
		}
		for _, a := range c.Args {
			if addr, ok := strings.CutPrefix(a, "--metrics-bind-address="); ok && addr != "0" {
				return "http://" + addr + "/metrics"
			}
		}
	}
	return ""
}
