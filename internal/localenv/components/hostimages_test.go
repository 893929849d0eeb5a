package components

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/lifeboat-dev/lifeboat/internal/image"
)

// Each image's tag is the release its module builds.
func TestHostImageTagsMatchModules(t *testing.T) {
	cases := map[string]struct {
		ref, dir, module string
		tag              func(version string) string
	}{
		"kube-apiserver":          {KubeAPIServerImage, "kubernetes", "k8s.io/kubernetes", func(v string) string { return v }},
		"kube-controller-manager": {KubeControllerManagerImage, "kubernetes", "k8s.io/kubernetes", func(v string) string { return v }},
		"etcd":                    {EtcdImage, "etcd", "go.etcd.io/etcd/server/v3", func(v string) string { return strings.TrimPrefix(v, "v") + "-0" }},
		"coredns":                 {CoreDNSImage, CoreDNS, "github.com/coredns/coredns", func(v string) string { return v }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := requiredVersion(t, tc.dir, tc.module)
			if v == "" {
				t.Fatalf("modules/%s/go.mod.txt does not require %s", tc.dir, tc.module)
			}
			if want := tc.tag(v); !strings.HasSuffix(tc.ref, ":"+want) {
				t.Errorf("%s is not tagged %s (%s %s)", tc.ref, want, tc.module, v)
			}
		})
	}
}

// HostModules are optional modules, which Ensure accepts.
func TestHostModulesAreOptional(t *testing.T) {
	for _, m := range HostModules() {
		if !slices.Contains(Optional(), m) {
			t.Errorf("host module %s is not among Optional() %v", m, Optional())
		}
	}
}

func hostBinaries(t *testing.T) Binaries {
	t.Helper()
	// Any Go binary does for the images; the test binary is one.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bins := Binaries{}
	for _, n := range []string{KubeAPIServer, KubeControllerManager, Etcd, Pause, CoreDNS} {
		bins[n] = self
	}
	return bins
}

func TestHostImages(t *testing.T) {
	created := time.Unix(1764115200, 0)
	list, err := HostImages(hostBinaries(t), created)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		path           string
		netBindService bool
	}{
		"registry.k8s.io/kube-apiserver:v1.35.4":          {"/usr/local/bin/kube-apiserver", false},
		"registry.k8s.io/kube-controller-manager:v1.35.4": {"/usr/local/bin/kube-controller-manager", false},
		"registry.k8s.io/etcd:3.6.5-0":                    {"/usr/local/bin/etcd", false},
		"registry.k8s.io/pause:3.10.1":                    {"/pause", false},
		"registry.k8s.io/coredns/coredns:v1.15.0":         {"/coredns", true},
	}
	if len(list) != len(want) {
		t.Fatalf("HostImages gave %d images, want %d", len(list), len(want))
	}
	for _, hi := range list {
		w, ok := want[hi.Ref]
		switch {
		case !ok:
			t.Errorf("unexpected image %s", hi.Ref)
		case hi.Spec.Path != w.path || hi.Spec.NetBindService != w.netBindService:
			t.Errorf("%s: path %s, cap_net_bind_service %v; want %s, %v", hi.Ref, hi.Spec.Path, hi.Spec.NetBindService, w.path, w.netBindService)
		case !hi.Spec.Created.Equal(created) || hi.Spec.User != "":
			t.Errorf("%s: created %s, user %q", hi.Ref, hi.Spec.Created, hi.Spec.User)
		}
	}

	bins := hostBinaries(t)
	delete(bins, CoreDNS)
	if _, err := HostImages(bins, created); err == nil || !strings.Contains(err.Error(), "coredns") {
		t.Errorf("HostImages without coredns = %v, want an error naming it", err)
	}
}

// The tarball holds every image under its upstream tag, each running its
// binary from where the upstream image has it.
func TestWriteHostImages(t *testing.T) {
	file := filepath.Join(t.TempDir(), "images.tar")
	if err := WriteHostImages(hostBinaries(t), file, time.Unix(1764115200, 0)); err != nil {
		t.Fatal(err)
	}
	list, err := HostImages(hostBinaries(t), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, hi := range list {
		tag, err := name.NewTag(hi.Ref)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(file, &tag)
		if err != nil {
			t.Fatalf("loading %s: %v", hi.Ref, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if ep := strings.Join(cfg.Config.Entrypoint, " "); ep != hi.Spec.Path || cfg.Config.User != image.NonRootUser {
			t.Errorf("%s: entrypoint %q user %q", hi.Ref, ep, cfg.Config.User)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: %d layers, %v; want one", hi.Ref, len(layers), err)
		}
		if got := hasCapability(t, layers[0], hi.Spec.Path); got != hi.Spec.NetBindService {
			t.Errorf("%s: binary has a file capability %v, want %v", hi.Ref, got, hi.Spec.NetBindService)
		}
	}
}

// hasCapability says whether the file at path in layer carries a file
// capability (security.capability).
func hasCapability(t *testing.T, layer v1.Layer, path string) bool {
	t.Helper()
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("the layer lacks %s", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == strings.TrimPrefix(path, "/") {
			_, ok := h.PAXRecords["SCHILY.xattr.security.capability"]
			return ok
		}
	}
}
