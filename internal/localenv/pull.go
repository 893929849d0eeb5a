package localenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
)

// A pull member (Options.PullMembers) is joined as a user joins a cluster in
// Pull mode: a bootstrap token is created in the control plane, the member
// side registers with it (`lifeboat register`: a certificate signing request
// the controller manager approves), and `lifeboat agent` runs with the
// certificate it got (component memberN-agent). The control plane never
// connects to the member. In a partitionable environment the agent reaches
// the control plane through a proxy of its own (memberN-agent-proxy) that
// shares the member's cut file: `lifeboat env partition` cuts both ways.

// agentComponent names a pull member's agent.
func agentComponent(member string) string { return member + "-agent" }

// agentProxyComponent names the proxy between a pull member's agent and
// the control plane.
func agentProxyComponent(member string) string { return member + "-agent-proxy" }

// agentKubeconfig is where the member's registration writes the agent's
// control-plane credentials.
func agentKubeconfig(dir, member string) string {
	return filepath.Join(dir, member, "agent-kubeconfig")
}

// checkPullMembers refuses names that are not among the members.
func checkPullMembers(names []string, members int) error {
	seen := map[string]bool{}
	for _, n := range names {
		i, err := strconv.Atoi(n[min(len(n), len("member")):])
		if len(n) <= len("member") || n[:len("member")] != "member" || err != nil || i < 1 || i > members || strconv.Itoa(i) != n[len("member"):] {
			return fmt.Errorf("--pull-member %q: want one of the members member1 to member%d", n, members)
		}
		if seen[n] {
			return fmt.Errorf("--pull-member %q given twice", n)
		}
		seen[n] = true
	}
	return nil
}

// pullInfo marks c as a pull member and chooses where its agent reaches
// the control plane.
func (u *upper) pullInfo(c *ClusterInfo) error {
	c.Pull = true
	if !u.opts.Partitionable {
		return nil
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	c.AgentEndpoint = u.endpointFor(port)
	return nil
}

// startPullMember registers pull member c and starts its agent.
func (u *upper) startPullMember(ctx context.Context, c ClusterInfo) error {
	cp, ok := u.state.Cluster(ControlPlaneName)
	if !ok {
		return fmt.Errorf("no control plane in the environment")
	}
	endpoint := cp.Server
	if c.AgentEndpoint != "" {
		if err := u.startAgentProxy(ctx, c, cp); err != nil {
			return err
		}
		endpoint = c.AgentEndpoint
	}
	if err := registerPull(ctx, u.state, c, endpoint, agentKubeconfig(u.state.Dir, c.Name)); err != nil {
		return fmt.Errorf("registering %s in Pull mode: %w", c.Name, err)
	}
	return u.startAgent(ctx, c)
}

// startAgentProxy starts the proxy the agent of c reaches the control
// plane through.
func (u *upper) startAgentProxy(ctx context.Context, c, cp ClusterInfo) error {
	listen, err := url.Parse(c.AgentEndpoint)
	if err != nil {
		return fmt.Errorf("parsing %s's agent endpoint: %w", c.Name, err)
	}
	target, err := url.Parse(cp.Server)
	if err != nil {
		return fmt.Errorf("parsing the control plane's address: %w", err)
	}
	return u.startProxyComponent(ctx, Component{
		Name: agentProxyComponent(c.Name), Cluster: c.Name,
		Binary: u.opts.LifeboatBinary,
		Args:   []string{"env", "proxy", "--listen", listen.Host, "--target", target.Host, "--cut-file", cutFile(u.state.Dir, c.Name)},
	}, listen.Host)
}

// startAgent starts `lifeboat agent` for pull member c, with the member's
// admin kubeconfig (the agent is the member's own component) and its
// registered control-plane credentials.
func (u *upper) startAgent(ctx context.Context, c ClusterInfo) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{
		"agent",
		"--cluster-name=" + c.Name,
		"--kubeconfig=" + agentKubeconfig(u.state.Dir, c.Name),
		"--cluster-kubeconfig=" + filepath.Join(u.state.Dir, c.Name, "kubeconfig"),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(port),
		"--metrics-bind-address=0",
	}
	args = append(args, u.opts.AgentArgs...)
	return u.start(ctx, Component{
		Name:    agentComponent(c.Name),
		Cluster: c.Name,
		Binary:  u.opts.LifeboatBinary,
		Args:    args,
		Health:  "http://127.0.0.1:" + strconv.Itoa(port) + "/readyz",
	}, healthCheck{}, 60*time.Second)
}

// registerPull registers pull member c with the control plane as a user
// does, writing the agent's credentials to kubeconfig: a bootstrap token
// and the agent's access made with the environment's admin credentials
// (`lifeboat token create`), then the registration with nothing but the
// token and the CA's pin (`lifeboat register`), through endpoint. The
// token is revoked once used.
func registerPull(ctx context.Context, s *State, c ClusterInfo, endpoint, kubeconfig string) error {
	cp, err := s.controlPlaneClient()
	if err != nil {
		return err
	}
	created, err := bootstrap.CreateToken(ctx, cp, bootstrap.TokenOptions{Cluster: c.Name, TTL: 10 * time.Minute}, time.Now())
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(s.CAPath())
	if err != nil {
		return fmt.Errorf("reading the environment's CA: %w", err)
	}
	hashes, err := bootstrap.CAHashesOfPEM(caPEM)
	if err != nil {
		return err
	}
	if _, err := bootstrap.Register(ctx, bootstrap.RegisterOptions{
		ControlPlaneURL: endpoint,
		Token:           created.Token.String(),
		CAHashes:        hashes,
		ClusterName:     c.Name,
		KubeconfigPath:  kubeconfig,
		Timeout:         time.Minute,
	}); err != nil {
		return err
	}
	if _, err := bootstrap.DeleteToken(ctx, cp, created.Token.ID); err != nil {
		return fmt.Errorf("revoking the used bootstrap token: %w", err)
	}
	return nil
}
