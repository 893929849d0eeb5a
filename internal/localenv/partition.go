package localenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/netproxy"
)

// In an environment started with Options.Partitionable, every member's API
// server is reached by the control plane through a proxy of the
// environment (component memberN-proxy), so that `lifeboat env partition`
// can cut the path while the member keeps running, and the control plane
// sees what a network partition shows it: requests that time out. The
// environment's own kubeconfig reaches the members directly.

// proxyComponent names a member's proxy.
func proxyComponent(member string) string { return member + "-proxy" }

// cutFile is the file whose existence cuts the member's path.
func cutFile(dir, member string) string { return filepath.Join(dir, member, "partitioned") }

// startProxy starts the proxy in front of member c's API server, listening
// on c.Endpoint.
func (u *upper) startProxy(ctx context.Context, c ClusterInfo) error {
	listen, err := url.Parse(c.Endpoint)
	if err != nil {
		return fmt.Errorf("parsing %s's endpoint: %w", c.Name, err)
	}
	target, err := url.Parse(c.Server)
	if err != nil {
		return fmt.Errorf("parsing %s's address: %w", c.Name, err)
	}
	return u.startProxyComponent(ctx, Component{
		Name: proxyComponent(c.Name), Cluster: c.Name,
		Binary: u.opts.LifeboatBinary,
		Args:   []string{"env", "proxy", "--listen", listen.Host, "--target", target.Host, "--cut-file", cutFile(u.state.Dir, c.Name)},
	}, listen.Host)
}

// startProxyComponent starts a proxy component and waits until it listens
// on listen.
func (u *upper) startProxyComponent(ctx context.Context, comp Component, listen string) error {
	if err := u.start(ctx, comp, healthCheck{}, 10*time.Second); err != nil {
		return err
	}
	// Listening is what makes it ready: the start above only knows it runs.
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", listen, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not listen on %s: %w", comp.Name, listen, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RunProxy is `lifeboat env proxy`: it forwards listen to target until ctx
// is done, cut while cutFile exists.
func RunProxy(ctx context.Context, listen, target, cutFilePath string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	return netproxy.Serve(ctx, ln, target, netproxy.FileCut(cutFilePath))
}

// ErrNoProxy says a cluster's path from the control plane cannot be cut.
var ErrNoProxy = errors.New("the control plane does not reach it through a proxy of the environment")

// Partition cuts the path from the control plane to member: its API server
// keeps running, but nothing the control plane sends reaches it, nor any
// answer the control plane, until Heal. A pull member's agent loses its
// path to the control plane too (its proxy shares the cut file). The
// environment's own kubeconfig still reaches the member.
func Partition(dir, member string) error {
	c, err := partitionable(dir, member)
	if err != nil {
		return err
	}
	f, err := os.Create(cutFile(dir, c.Name))
	if err != nil {
		return fmt.Errorf("cutting %s's path: %w", member, err)
	}
	return f.Close()
}

// Heal restores the path Partition cut.
func Heal(dir, member string) error {
	c, err := partitionable(dir, member)
	if err != nil {
		return err
	}
	if err := os.Remove(cutFile(dir, c.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("healing %s's path: %w", member, err)
	}
	return nil
}

// Partitioned says whether member's path is cut.
func (s *State) Partitioned(member string) bool {
	_, err := os.Stat(cutFile(s.Dir, member))
	return err == nil
}

func partitionable(dir, member string) (ClusterInfo, error) {
	s, err := Load(dir)
	if err != nil {
		return ClusterInfo{}, err
	}
	c, ok := s.Cluster(member)
	if !ok || !c.Member {
		return ClusterInfo{}, fmt.Errorf("no member %q in the environment (members: %v)", member, s.Members())
	}
	if c.Endpoint == "" {
		return ClusterInfo{}, fmt.Errorf("%s: %w (start the environment with lifeboat up --partitionable)", member, ErrNoProxy)
	}
	return c, nil
}

// endpointFor is the proxy address of a member listening on port.
func (u *upper) endpointFor(port int) string {
	return "https://" + net.JoinHostPort(u.bindAddress(), strconv.Itoa(port))
}
