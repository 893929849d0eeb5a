package components

import (
	"fmt"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/lifeboat-dev/lifeboat/internal/image"
)

// The host cluster's images, built from the component binaries (no image
// is pulled) and tagged with the upstream references, so that the Helm
// chart's image defaults and containerd's sandbox image find them as they
// are. Tests check that each tag matches the version of its module.
const (
	KubeAPIServerImage         = "registry.k8s.io/kube-apiserver:" + KubernetesVersion
	KubeControllerManagerImage = "registry.k8s.io/kube-controller-manager:" + KubernetesVersion
	// EtcdImage is tagged like the upstream image, the etcd release of
	// modules/etcd with the "-0" image revision.
	EtcdImage = "registry.k8s.io/etcd:3.6.5-0"
	// PauseImage carries the pause program of modules/pause under the tag
	// of the upstream pause image that Kubernetes v1.35 expects.
	PauseImage   = "registry.k8s.io/pause:3.10.1"
	CoreDNSImage = "registry.k8s.io/coredns/coredns:v1.15.0"
)

// HostModules are the optional modules the host cluster needs, to pass to
// Ensure: its node agents, the pause program and CoreDNS.
func HostModules() []string { return []string{Pause, CoreDNS, KubeNode} }

// HostImage is one image of the host cluster: its reference and what it is
// built from.
type HostImage struct {
	Ref  string
	Spec image.Spec
}

// HostImages lists the host cluster's images, made from the binaries in bins
// (which must hold the core set and HostModules), with creation time
// created. Each binary goes where the upstream image has it and runs as
// image.NonRootUser; CoreDNS, like upstream's, may listen on port 53
// without root (cap_net_bind_service).
func HostImages(bins Binaries, created time.Time) ([]HostImage, error) {
	images := []struct {
		ref, binary, path string
		netBindService    bool
	}{
		{KubeAPIServerImage, KubeAPIServer, "/usr/local/bin/kube-apiserver", false},
		{KubeControllerManagerImage, KubeControllerManager, "/usr/local/bin/kube-controller-manager", false},
		{EtcdImage, Etcd, "/usr/local/bin/etcd", false},
		{PauseImage, Pause, "/pause", false},
		{CoreDNSImage, CoreDNS, "/coredns", true},
	}
	out := make([]HostImage, 0, len(images))
	for _, i := range images {
		bin, ok := bins[i.binary]
		if !ok {
			return nil, fmt.Errorf("the image %s needs the %s binary, which was not built (Ensure builds it when given HostModules())", i.ref, i.binary)
		}
		out = append(out, HostImage{Ref: i.ref, Spec: image.Spec{
			Binary:         bin,
			Path:           i.path,
			Labels:         map[string]string{"org.opencontainers.image.title": i.binary},
			Created:        created,
			OS:             runtime.GOOS,
			Architecture:   runtime.GOARCH,
			NetBindService: i.netBindService,
		}})
	}
	return out, nil
}

// WriteHostImages builds the images of HostImages and writes them all into
// one tarball at out, for `ctr images import`.
func WriteHostImages(bins Binaries, out string, created time.Time) error {
	list, err := HostImages(bins, created)
	if err != nil {
		return err
	}
	images := make(map[string]v1.Image, len(list))
	for _, hi := range list {
		img, err := image.Build(hi.Spec)
		if err != nil {
			return fmt.Errorf("building the image %s: %w", hi.Ref, err)
		}
		images[hi.Ref] = img
	}
	if err := image.WriteAll(images, out); err != nil {
		return fmt.Errorf("writing the host cluster's images: %w", err)
	}
	return nil
}
