package hostnode

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// The host cluster's addresses. They are fixed, so only one host cluster
// runs on a machine; every range is guarded by an unreachable route, so a
// packet for it never takes the default route off the machine.
const (
	// NodeIP is the node's address, on the port-less bridge NodeBridge.
	// Every API server of an environment with a host cluster listens on it
	// too, so that pods can reach them.
	NodeIP = "10.99.0.1"
	// NodeRange holds NodeIP.
	NodeRange = "10.99.0.0/16"
	// PodCIDR is the pods' range, on the CNI bridge PodBridge.
	PodCIDR = "10.88.0.0/16"
	// PodGateway is the CNI bridge's own address.
	PodGateway = "10.88.0.1"
	// ServiceCIDR is the ClusterIP range.
	ServiceCIDR = "10.97.0.0/16"
	// KubernetesServiceIP is the first ClusterIP: the `kubernetes` Service.
	KubernetesServiceIP = "10.97.0.1"
	// DNSServiceIP is CoreDNS's ClusterIP.
	DNSServiceIP = "10.97.0.10"
	// NodeBridge carries NodeIP. The kernel here has no dummy interfaces;
	// a bridge without ports is a device that drops what is routed out of it.
	NodeBridge = "lbnode0"
	// PodBridge is the CNI bridge.
	PodBridge = "cni0"
	// EgressChain filters, in the raw table, what pods send: only pods,
	// ClusterIPs and the node are allowed.
	EgressChain = "LIFEBOAT-EGRESS"
	// guardMetric is the metric of the unreachable guard routes: higher
	// than any real route, so a real one wins while it exists.
	guardMetric = "4000"
)

// Runner runs a command and returns its combined output.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) (string, error)
}

// ExecRunner runs commands on this machine.
type ExecRunner struct{}

// Run implements Runner.
func (ExecRunner) Run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// command is one step of the network set-up or tear-down.
type command []string

// guardedRanges are every range the host cluster uses, each given an
// unreachable route before anything else is set up.
var guardedRanges = []string{PodCIDR, ServiceCIDR, NodeRange}

// setupCommands are the network set-up, in order. The guard routes come
// first: if a later step fails, or a component starts before the address
// exists, its packets are refused by the kernel instead of leaving through
// the default route.
func setupCommands() []command {
	var cmds []command
	for _, r := range guardedRanges {
		cmds = append(cmds, command{"ip", "route", "replace", "unreachable", r, "metric", guardMetric})
	}
	cmds = append(cmds,
		command{"ip", "link", "add", NodeBridge, "type", "bridge"},
		command{"ip", "addr", "add", NodeIP + "/32", "dev", NodeBridge},
		command{"ip", "link", "set", NodeBridge, "up"},
		// A ClusterIP that no rule translates dies in the port-less bridge.
		command{"ip", "route", "replace", ServiceCIDR, "dev", NodeBridge},
		command{"iptables", "-t", "raw", "-N", EgressChain},
		command{"iptables", "-t", "raw", "-A", EgressChain, "-d", PodCIDR, "-j", "RETURN"},
		command{"iptables", "-t", "raw", "-A", EgressChain, "-d", ServiceCIDR, "-j", "RETURN"},
		command{"iptables", "-t", "raw", "-A", EgressChain, "-d", NodeIP + "/32", "-j", "RETURN"},
		command{"iptables", "-t", "raw", "-A", EgressChain, "-j", "DROP"},
		command{"iptables", "-t", "raw", "-I", "PREROUTING", "1", "-s", PodCIDR, "-j", EgressChain},
	)
	return cmds
}

// kubeletChains are the chains the kubelet creates in every table it
// touches, for IPv4 and IPv6, and the jumps into them (kube-proxy
// --cleanup removes kube-proxy's own).
func kubeletChains() []command {
	var cmds []command
	for _, ipt := range []string{"iptables", "ip6tables"} {
		cmds = append(cmds,
			command{ipt, "-t", "filter", "-D", "INPUT", "-j", "KUBE-FIREWALL"},
			command{ipt, "-t", "filter", "-D", "OUTPUT", "-j", "KUBE-FIREWALL"},
			command{ipt, "-t", "filter", "-F", "KUBE-FIREWALL"},
			command{ipt, "-t", "filter", "-X", "KUBE-FIREWALL"},
			command{ipt, "-t", "mangle", "-X", "KUBE-IPTABLES-HINT"},
		)
		for _, table := range []string{"mangle", "filter", "nat"} {
			cmds = append(cmds, command{ipt, "-t", table, "-X", "KUBE-KUBELET-CANARY"})
		}
	}
	return cmds
}

// teardownCommands undo setupCommands, the kubelet's chains and what the
// CNI bridge plugin added, in reverse; each may fail because its object is
// already gone. The guard routes go last.
func teardownCommands() []command {
	cmds := append(kubeletChains(), []command{
		{"iptables", "-t", "raw", "-D", "PREROUTING", "-s", PodCIDR, "-j", EgressChain},
		{"iptables", "-t", "raw", "-F", EgressChain},
		{"iptables", "-t", "raw", "-X", EgressChain},
		{"ip", "link", "del", PodBridge},
		{"ip", "route", "del", ServiceCIDR, "dev", NodeBridge},
		{"ip", "link", "del", NodeBridge},
	}...)
	for i := len(guardedRanges) - 1; i >= 0; i-- {
		cmds = append(cmds, command{"ip", "route", "del", "unreachable", guardedRanges[i], "metric", guardMetric})
	}
	return cmds
}

// ErrInUse says another host cluster's network is set up on this machine.
var ErrInUse = errors.New("a host cluster already runs on this machine")

// SetupNetwork gives the machine the host cluster's network, and checks
// that NodeIP is local before it returns. On failure it undoes what it did.
func SetupNetwork(ctx context.Context, r Runner) error {
	if out, err := r.Run(ctx, "ip", "-o", "link", "show", NodeBridge); err == nil && strings.Contains(out, NodeBridge) {
		return fmt.Errorf("%w (the interface %s exists; `lifeboat down` in its state directory stops it)", ErrInUse, NodeBridge)
	}
	for _, c := range setupCommands() {
		if _, err := r.Run(ctx, c[0], c[1:]...); err != nil {
			return errors.Join(fmt.Errorf("setting up the host network: %w", err), TeardownNetwork(ctx, r))
		}
	}
	out, err := r.Run(ctx, "ip", "route", "get", NodeIP)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(out), "local "+NodeIP) {
		return errors.Join(fmt.Errorf("the node address %s is not local after set-up (ip route get says %q); refusing to start anything that would send to it", NodeIP, strings.TrimSpace(out)), TeardownNetwork(ctx, r))
	}
	return nil
}

// TeardownNetwork removes the host cluster's network. Steps whose object
// is already gone are skipped; the first other failure is returned after
// every step was tried.
func TeardownNetwork(ctx context.Context, r Runner) error {
	var errs []error
	for _, c := range teardownCommands() {
		if _, err := r.Run(ctx, c[0], c[1:]...); err != nil && !gone(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// gone says a tear-down step failed because there was nothing to remove.
func gone(err error) bool {
	msg := err.Error()
	for _, s := range []string{"Cannot find device", "No such process", "No chain/target/match by that name",
		"does a matching rule exist", "No such file or directory", "doesn't exist", "not found"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
