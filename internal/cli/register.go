package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
)

// Name of register's flag for the file it writes; clusterFlagHint knows a
// command by it.
const flagAgentKubeconfig = "agent-kubeconfig"

func newRegisterCommand() *cobra.Command {
	var o bootstrap.RegisterOptions
	cmd := &cobra.Command{
		Use:   "register CONTROL_PLANE_URL --token ID.SECRET --discovery-token-ca-cert-hash sha256:HEX --cluster-name NAME --agent-kubeconfig FILE",
		Short: "Register this member cluster in pull mode with a bootstrap token",
		Long: `Register a member cluster in pull mode: run in (or next to) the member, with the
command ` + "`lifeboat token create --cluster NAME`" + ` printed in the control plane. It needs
nothing but the token and the CA hash, and contacts only the control plane:

  1. it pins the control plane's CA: the API server at CONTROL_PLANE_URL must
     send, after its serving certificate, a CA whose public key has the sha256
     --discovery-token-ca-cert-hash (kubeadm's format); or --ca-file gives the
     CA. With a hash too, only the certificates of the file whose public key
     has a given hash are trusted (at least one must); without, all of them.
     Every connection after this first handshake, and the kubeconfig written,
     trust those CA(s) alone;
  2. with the bootstrap token it creates a CertificateSigningRequest
     (lifeboat-agent-NAME-*) for the user system:lifeboat:agent:NAME in the
     group system:lifeboat:agents, from an ECDSA P-256 key made here;
  3. it waits (--timeout) until the control plane approves and signs it, or
     denies it (a cluster NAME joined in Push mode, a token made for another
     cluster: the denial is printed);
  4. it writes FILE (mode 0600, replaced atomically): a kubeconfig with the
     control plane's URL and CA, the certificate and key, in a context named
     NAME, for ` + "`lifeboat agent --kubeconfig FILE`" + `.

A malformed token is refused before anything is sent, and so is a FILE that cannot
be written (a directory, or in a directory this user cannot write to). An expired,
revoked or mistyped token is refused by the control plane: create a new one.`,
		Example: `  lifeboat register https://10.0.0.5:6443 --token abcdef.0123456789abcdef \
    --discovery-token-ca-cert-hash sha256:1f0e... --cluster-name member4 \
    --agent-kubeconfig /etc/lifeboat/agent.kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ControlPlaneURL = args[0]
			out := cmd.OutOrStdout()
			o.Progress = func(line string) { fmt.Fprintln(out, line) }
			res, err := bootstrap.Register(cmd.Context(), o)
			if err != nil {
				return err
			}
			printRegistered(out, o, res)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Token, "token", "", "The bootstrap token, ID.SECRET, from \"lifeboat token create\".")
	cmd.Flags().StringArrayVar(&o.CAHashes, "discovery-token-ca-cert-hash", nil, "Pin of the control plane's CA, sha256:HEX of its public key (repeatable: any may match).")
	cmd.Flags().StringVar(&o.CAFile, "ca-file", "", "The control plane's CA certificate(s), PEM, for an API server that does not send its CA: with --discovery-token-ca-cert-hash only those it names are trusted, without it all of them.")
	cmd.Flags().StringVar(&o.ClusterName, "cluster-name", "", "Name of this cluster in the control plane, as given to \"lifeboat token create --cluster\".")
	cmd.Flags().StringVar(&o.KubeconfigPath, flagAgentKubeconfig, "", "Where to write the agent's kubeconfig for the control plane (mode 0600).")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", bootstrap.DefaultRegisterTimeout, "How long to wait for the certificate (0: the default).")
	cmd.Flags().DurationVar(&o.CertificateDuration, "certificate-duration", bootstrap.DefaultCertificateDuration, "Validity asked for the agent's certificate, from 10m to 596523h (0: the default; the control plane's signer may shorten it).")
	for _, f := range []string{"token", "cluster-name", flagAgentKubeconfig} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

func printRegistered(out io.Writer, o bootstrap.RegisterOptions, res bootstrap.Registered) {
	fmt.Fprintf(out, "Cluster %s registered: the agent authenticates as %s (group %s) until %s.\n",
		o.ClusterName, bootstrap.AgentUser(o.ClusterName), bootstrap.AgentsGroup, res.NotAfter.UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "Run the agent with:\n  lifeboat agent --cluster-name %s --kubeconfig %s\n", o.ClusterName, o.KubeconfigPath)
}
