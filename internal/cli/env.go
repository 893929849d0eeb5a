package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

const defaultStateDir = ".lifeboat"

func newUpCommand() *cobra.Command {
	opts := localenv.Options{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local environment: a control plane and N member clusters",
		Long: `Start Lifeboat's local environment on this machine, without Docker:
one etcd, the control-plane kube-apiserver with Lifeboat's CRDs, N member clusters
member1..N (each a real kube-apiserver, kube-controller-manager and kube-scheduler,
with kwok simulating one Ready node named memberN-control-plane and its pods), the
members registered as Clusters, and the Lifeboat controller manager.

On first use the pinned Kubernetes components are built from the Go module proxy
into the cache directory (several minutes); later starts reuse them.

Writes DIR/kubeconfig with the contexts "lifeboat" (the control plane, current)
and member1..N. Running "up" again while the environment is up changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out = cmd.OutOrStdout()
			s, err := localenv.Up(cmd.Context(), opts)
			if errors.Is(err, localenv.ErrAlreadyUp) {
				fmt.Fprintf(opts.Out, "The local environment in %s is already up; nothing changed.\n\n", s.Dir)
				printNextSteps(opts.Out, s, opts.CacheDir)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(opts.Out)
			printNextSteps(opts.Out, s, opts.CacheDir)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Members, "members", 3, "Number of member clusters (1-20).")
	f.StringVar(&opts.Dir, "state-dir", defaultStateDir, "Directory for the environment's state, logs and kubeconfig.")
	f.StringVar(&opts.CacheDir, "cache-dir", components.DefaultCacheDir(), "Where the Kubernetes components are built and kept ($LIFEBOAT_CACHE_DIR).")
	f.StringArrayVar(&opts.ControllerManagerArgs, "controller-manager-arg", nil, "Extra flag for `lifeboat controller-manager` (repeatable), e.g. --controller-manager-arg=--v=2.")
	return cmd
}

func printNextSteps(out io.Writer, s *localenv.State, cacheDir string) {
	rel := s.KubeconfigPath()
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, rel); err == nil && !strings.HasPrefix(r, "..") {
			rel = r
		}
	}
	fmt.Fprintf(out, "Control plane and members: %s, %s\n\n", localenv.ControlPlaneName, strings.Join(s.Members(), ", "))
	fmt.Fprintf(out, "Next:\n  export KUBECONFIG=%s\n  kubectl get clusters\n  kubectl --context %s get nodes\n", rel, s.Members()[0])
	if _, err := exec.LookPath("kubectl"); err != nil {
		if key, kerr := components.Key(); kerr == nil {
			fmt.Fprintf(out, "\nNo kubectl on PATH; one was built for you:\n  alias kubectl=%s\n", filepath.Join(cacheDir, "components", key, "bin", components.Kubectl))
		}
	}
	fmt.Fprintf(out, "\nState and logs: %s\nStop everything: lifeboat down --state-dir %s\n", s.Dir, s.Dir)
}

func newDownCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local environment and remove its state",
		Long: `Stop every process the local environment started, by the PID recorded in its state
directory (never by name), then remove the state directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := localenv.Down(dir, cmd.OutOrStdout())
			if errors.Is(err, localenv.ErrNotFound) {
				fmt.Fprintf(cmd.OutOrStdout(), "No local environment in %s; nothing to stop.\n", dir)
				return nil
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "state-dir", defaultStateDir, "Directory of the environment to stop.")
	return cmd
}

func newStatusCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each component of the local environment and whether it is healthy",
		Long:  "List the local environment's components with their PID and health. Exits non-zero when any is unhealthy.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := localenv.Load(dir)
			if err != nil {
				return err
			}
			rows := localenv.Status(cmd.Context(), s)
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "COMPONENT\tPID\tSTATUS\tDETAIL")
			unhealthy := 0
			for _, r := range rows {
				st := "Healthy"
				if !r.Healthy {
					st = "Unhealthy"
					unhealthy++
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", r.Name, r.PID, st, r.Detail)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if guard, err := describeStormGuard(cmd.Context(), s); err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "\nStorm guard: %s\n", guard)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "\nStorm guard: unknown (%v)\n", err)
			}
			if unhealthy > 0 {
				return fmt.Errorf("%d of %d components unhealthy", unhealthy, len(rows))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "state-dir", defaultStateDir, "Directory of the environment.")
	return cmd
}

// describeStormGuard asks the control plane for the storm guard's state,
// computed from the Clusters as the taint manager sees them.
func describeStormGuard(ctx context.Context, s *localenv.State) (string, error) {
	cfg, err := s.RESTConfig(localenv.ControlPlaneName)
	if err != nil {
		return "", err
	}
	cfg.Timeout = 5 * time.Second
	scheme, err := lbscheme.New()
	if err != nil {
		return "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	return failover.DescribeStormGuard(ctx, c)
}
