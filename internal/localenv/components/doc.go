// Package components builds the pinned upstream Kubernetes components that the
// local environment runs (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubectl and kwok) and, only when asked for, the optional
// ones: Kyverno, for `lifeboat up --with-kyverno`, and those of the host
// cluster's node (HostModules: kubelet and kube-proxy, CoreDNS, and a pause
// program for pod sandboxes), for `lifeboat up --host`.
//
// Release tarballs cannot be downloaded on the machines Lifeboat is developed
// and tested on, but the Go module proxy can be reached, so each component is
// built from its Go module. Every component has a tiny module of its own under
// modules/ (go.mod, go.sum and, for etcd and pause, a main package). The
// module files are embedded in the lifeboat binary with a ".txt" suffix (a
// directory holding a real go.mod would be a separate module and could not be
// embedded), written into the cache directory and built there with the local
// Go toolchain.
//
// The versions are pinned in exactly one place: the go.mod files under
// modules/. The cache is keyed by a hash of those files and the Go version, so
// changing a pin rebuilds, and a warm cache costs nothing. The core set shares
// one key (Key, DIR/components/KEY); each optional module has a key of its
// own (DIR/components/NAME-KEY), so adding or changing one never rebuilds the
// core set. An optional module can also bring folders of its source along
// (Kyverno's CRDs, config/crds), copied out of the module cache next to its
// binary so that they always match it.
//
// The host cluster runs its control plane and add-ons from images, which are
// made from the same binaries rather than pulled (HostImages,
// WriteHostImages) and tagged with the upstream references
// (registry.k8s.io/...), so that the Helm chart's defaults and containerd's
// sandbox image need no change.
package components
