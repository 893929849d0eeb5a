package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
)

// newTokenCommand returns `lifeboat token` and its subcommands.
func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and delete the bootstrap tokens that register clusters in pull mode",
		Long: `Bootstrap tokens register a member cluster in pull mode: ` + "`lifeboat token create`" + ` in
the control plane, then ` + "`lifeboat register`" + ` in the member with the command it prints.
See docs/pull-mode.md.`,
	}
	cmd.AddCommand(newTokenCreateCommand(), newTokenListCommand(), newTokenDeleteCommand())
	return cmd
}

func newTokenCreateCommand() *cobra.Command {
	var cp controlPlaneFlags
	var o bootstrap.TokenOptions
	var serverURL string
	cmd := &cobra.Command{
		Use:   "create --cluster NAME [--ttl 24h]",
		Short: "Create a bootstrap token for the agent of a cluster in pull mode",
		Long: `Create a bootstrap token with which the member cluster NAME registers in pull
mode, and print the ` + "`lifeboat register`" + ` command to run in the member.

In the control plane (--kubeconfig/--context, default: $KUBECONFIG, else
~/.kube/config, and its current context) it first ensures, idempotently, what the
agent of NAME needs:
  - ClusterRole and ClusterRoleBinding lifeboat:agent-bootstrapper (group
    system:bootstrappers:lifeboat): create and read CertificateSigningRequests;
  - ClusterRole and ClusterRoleBinding lifeboat:agent (group
    system:lifeboat:agents): read ResourceInterpreterCustomizations;
  - in the namespace default, the Role and RoleBinding lifeboat:agent (group
    system:lifeboat:agents): record Events about Clusters;
  - ClusterRole and ClusterRoleBinding lifeboat:agent:NAME (user
    system:lifeboat:agent:NAME): read the Cluster NAME, write its status only;
  - the namespace karmada-es-NAME with the Role and RoleBinding lifeboat:agent:
    read and update Works and their status, record Events;
  - the Lease karmada-cluster/NAME with the Role and RoleBinding
    lifeboat:agent:NAME: renew that Lease only;
  - the Cluster NAME in Pull mode, when it does not exist.
Then it creates the token's Secret kube-system/bootstrap-token-ID, which the API
server accepts until it expires (--ttl) or is deleted (` + "`lifeboat token delete`" + `).

A NAME joined in Push mode is refused. The control plane's kube-apiserver must
run with --enable-bootstrap-token-auth, and its kube-controller-manager must sign
kubernetes.io/kube-apiserver-client requests (lifeboat up and the Helm chart
do both).`,
		Example: `  lifeboat token create --cluster member4
  lifeboat token create --cluster member4 --ttl 1h --control-plane-url https://lifeboat.example.com:6443`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bootstrap.ValidateTokenRequest(o.Cluster, o.TTL); err != nil {
				return err
			}
			if serverURL != "" {
				if err := bootstrap.ValidateServerURL(serverURL); err != nil {
					return fmt.Errorf("--control-plane-url: %w", err)
				}
			}
			ref, err := cp.ref()
			if err != nil {
				return err
			}
			cfg, _, err := ref.restConfig()
			if err != nil {
				return fmt.Errorf("control plane: %w", err)
			}
			if serverURL == "" {
				serverURL = cfg.Host
			}
			hashes, err := controlPlaneCAHashes(cfg)
			if err != nil {
				return err
			}
			c, err := connectControlPlane(ref)
			if err != nil {
				return err
			}
			res, err := bootstrap.CreateToken(cmd.Context(), c.client, o, time.Now())
			if err != nil {
				return err
			}
			printTokenCreated(cmd.OutOrStdout(), o.Cluster, serverURL, hashes, res)
			return nil
		},
	}
	cp.add(cmd.Flags())
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "Name of the cluster the token registers (a DNS label of at most 48 characters).")
	cmd.Flags().DurationVar(&o.TTL, "ttl", bootstrap.DefaultTokenTTL, "How long the token is accepted; it must expire (no 0).")
	cmd.Flags().StringVar(&serverURL, "control-plane-url", "", "URL of the control plane's API server as the member reaches it, for the printed register command (default: the kubeconfig's server).")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

// controlPlaneCAHashes are the pins of the CAs in cfg's CA bundle; none when
// the kubeconfig names no CA (the system's roots).
func controlPlaneCAHashes(cfg *rest.Config) ([]string, error) {
	data := cfg.CAData
	if len(data) == 0 && cfg.CAFile != "" {
		var err error
		if data, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the control plane's CA file: %w", err)
		}
	}
	if len(data) == 0 {
		return nil, nil
	}
	hashes, err := bootstrap.CAHashesOfPEM(data)
	if err != nil {
		return nil, fmt.Errorf("the control plane's CA in the kubeconfig: %w", err)
	}
	return hashes, nil
}

func agentKubeconfigName(clusterName string) string {
	return "lifeboat-agent-" + clusterName + ".kubeconfig"
}

func printTokenCreated(out io.Writer, clusterName, serverURL string, hashes []string, res bootstrap.CreatedToken) {
	fmt.Fprintf(out, "Bootstrap token %s for cluster %s, accepted until %s.\n", res.Token, clusterName, res.Expires.Format(time.RFC3339))
	if len(res.Changes) > 0 {
		fmt.Fprintln(out, "In the control plane, for the agent:")
		for _, ch := range res.Changes {
			fmt.Fprintf(out, "  %s\n", ch)
		}
	}
	register := []string{"lifeboat register", serverURL, "--token", res.Token.String()}
	for _, h := range hashes {
		register = append(register, "--discovery-token-ca-cert-hash", h)
	}
	if len(hashes) == 0 {
		register = append(register, "--ca-file", "CA_FILE")
	}
	register = append(register, "--cluster-name", clusterName, "--agent-kubeconfig", agentKubeconfigName(clusterName))
	fmt.Fprintln(out, "\nIn the member, register (the token is a secret: pass it on as one):")
	fmt.Fprintf(out, "  %s\n", strings.Join(register, " "))
	if len(hashes) == 0 {
		fmt.Fprintln(out, "  (the kubeconfig names no CA for the control plane, so there is no hash to pin: give the CA that signs its serving certificate as CA_FILE)")
	}
	fmt.Fprintln(out, "then run the agent there:")
	fmt.Fprintf(out, "  lifeboat agent --cluster-name %s --kubeconfig %s\n", clusterName, agentKubeconfigName(clusterName))
}

func newTokenListCommand() *cobra.Command {
	var cp controlPlaneFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the bootstrap tokens lifeboat token create made",
		Long: `List the bootstrap tokens ` + "`lifeboat token create`" + ` made in the control plane, by
cluster: their ID (the part before the dot; never the secret), cluster and
expiry. kube-controller-manager's token cleaner deletes expired ones.
` + controlPlaneHelpShort,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cp.client()
			if err != nil {
				return err
			}
			tokens, err := bootstrap.ListTokens(cmd.Context(), c)
			if err != nil {
				return err
			}
			printTokens(cmd.OutOrStdout(), tokens, time.Now())
			return nil
		},
	}
	cp.add(cmd.Flags())
	return cmd
}

func printTokens(out io.Writer, tokens []bootstrap.TokenInfo, now time.Time) {
	if len(tokens) == 0 {
		fmt.Fprintln(out, "No bootstrap tokens.")
		return
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tCLUSTER\tEXPIRES\t")
	for _, t := range tokens {
		expires := "unknown"
		switch {
		case t.Expires.IsZero():
		case t.Expired(now):
			expires = t.Expires.Format(time.RFC3339) + " (expired)"
		default:
			expires = fmt.Sprintf("%s (in %s)", t.Expires.Format(time.RFC3339), t.Expires.Sub(now).Round(time.Minute))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t\n", t.ID, t.Cluster, expires)
	}
	_ = w.Flush()
}

func newTokenDeleteCommand() *cobra.Command {
	var cp controlPlaneFlags
	var clusterName string
	cmd := &cobra.Command{
		Use:   "delete ID... | --cluster NAME",
		Short: "Revoke bootstrap tokens",
		Long: `Revoke bootstrap tokens by deleting their Secrets: the control plane's API server
refuses them at once. ID is the part of the token before the dot (lifeboat token
list shows them); --cluster revokes every token of that cluster. Only tokens
` + "`lifeboat token create`" + ` made are deleted.

An agent that registered already keeps its certificate: revoking the token only
stops new registrations. Unjoin the cluster to cut the agent off.
` + controlPlaneHelpShort,
		Example: `  lifeboat token delete abcdef
  lifeboat token delete --cluster member4`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case clusterName != "" && len(args) > 0:
				return errors.New("give token IDs or --cluster, not both")
			case clusterName == "" && len(args) == 0:
				return errors.New("give the ID of a token (lifeboat token list) or --cluster NAME")
			}
			if clusterName != "" {
				if err := cluster.ValidateClusterName(clusterName); err != nil {
					return err
				}
			}
			for _, id := range args {
				if err := bootstrap.ValidateTokenID(id); err != nil {
					return err
				}
			}
			c, err := cp.client()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if clusterName != "" {
				deleted, err := bootstrap.DeleteClusterTokens(cmd.Context(), c, clusterName)
				for _, t := range deleted {
					fmt.Fprintf(out, "Bootstrap token %s of cluster %s deleted.\n", t.ID, t.Cluster)
				}
				if err == nil && len(deleted) == 0 {
					fmt.Fprintf(out, "Cluster %s has no bootstrap tokens.\n", clusterName)
				}
				return err
			}
			var errs []error
			for _, id := range args {
				info, err := bootstrap.DeleteToken(cmd.Context(), c, id)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(out, "Bootstrap token %s of cluster %s deleted.\n", info.ID, info.Cluster)
			}
			return errors.Join(errs...)
		},
	}
	cp.add(cmd.Flags())
	cmd.Flags().StringVar(&clusterName, "cluster", "", "Revoke every token of this cluster.")
	return cmd
}

// controlPlaneHelpShort says which cluster the token commands work on.
const controlPlaneHelpShort = `
The control plane is --kubeconfig/--context (default: $KUBECONFIG, else
~/.kube/config, and its current context).`
