// Package hostnode holds what the local environment's host cluster needs
// beyond the processes every cluster of the environment runs: a real node
// (containerd, runc, the CNI bridge plugin, a kubelet and kube-proxy), its
// network, kept on the machine by guard routes and an egress filter, and
// the configuration files of each part.
//
// The host cluster is a Kubernetes cluster with one node that runs real
// containers, for installing Lifeboat's Helm chart the way a platform team
// does. There is one per machine: its addresses are fixed (Network).
//
// Pure parts (configuration, the order of the network steps, mount
// listing) are plain functions with table tests; the parts that change the
// machine take a Runner so that they are read in one place.
package hostnode
