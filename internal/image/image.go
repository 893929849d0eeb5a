// Package image builds container images from static Go binaries without a
// container runtime: one layer holding the binary (and the few files a
// non-root process expects), a config naming the entrypoint, the user and
// the labels, written as a tarball that `docker load`, `podman load` and
// `ctr images import` accept. The same inputs give the same image, byte for
// byte: every time in the image is the given creation time, every owner
// root, and the layer is compressed the same way each time.
package image

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// NonRootUser is the user the images run as: the conventional "nonroot"
// of distroless images, with no shell and no home to write to.
const NonRootUser = "65532:65532"

// LabelGoModules is the config label listing the Go modules compiled into
// the binary ("path version", one per line), read from its build info: the
// image's software bill of materials at module level.
const LabelGoModules = "dev.lifeboat.go-modules"

// Spec is what an image is built from.
type Spec struct {
	// Binary is the path of a static executable on this machine.
	Binary string
	// Path is where the binary goes in the image (absolute).
	Path string
	// Args are the default arguments after the entrypoint (Cmd).
	Args []string
	// Labels go into the config as they are.
	Labels map[string]string
	// Created is the image's creation time and every file's modification
	// time; the commit time keeps a build reproducible.
	Created time.Time
	// OS and Architecture of the binary (linux, amd64, ...).
	OS, Architecture string
}

// Build assembles the image of spec.
func Build(spec Spec) (v1.Image, error) {
	if !path.IsAbs(spec.Path) || path.Clean(spec.Path) != spec.Path || spec.Path == "/" {
		return nil, fmt.Errorf("the binary's path in the image must be a clean absolute file path, got %q", spec.Path)
	}
	if spec.OS == "" || spec.Architecture == "" {
		return nil, errors.New("the image's OS and architecture must be set")
	}
	bin, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	modules, err := goModules(spec.Binary)
	if err != nil {
		return nil, err
	}
	layerTar, err := layerContent(spec.Path, bin, spec.Created.UTC())
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating the layer: %w", err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: spec.Created.UTC()},
			CreatedBy: "lifeboat image build: " + spec.Path,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = spec.OS, spec.Architecture
	cfg.Created = v1.Time{Time: spec.Created.UTC()}
	cfg.Config.Entrypoint = []string{spec.Path}
	cfg.Config.Cmd = spec.Args
	cfg.Config.User = NonRootUser
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=" + path.Dir(spec.Path)}
	cfg.Config.Labels = map[string]string{LabelGoModules: modules}
	for k, v := range spec.Labels {
		cfg.Config.Labels[k] = v
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	return img, nil
}

// Write writes img as a tarball at file, tagged ref (for example
// "ghcr.io/lifeboat-dev/lifeboat:v0.3.0").
func Write(img v1.Image, ref, file string) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	tmp := file + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// layerContent is the layer's tar: the directories down to the binary,
// the binary (root-owned, 0755), and /etc/passwd and /etc/group naming
// the non-root user, all with modification time created.
func layerContent(binPath string, bin []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{"etc": true}
	for d := path.Dir(strings.TrimPrefix(binPath, "/")); d != "."; d = path.Dir(d) {
		dirs[d] = true
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("writing the layer: %w", err)
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{strings.TrimPrefix(binPath, "/"), 0o755, bin},
	}
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: created, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing the layer: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("writing the layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// goModules lists the Go modules compiled into the binary, from its build
// info: the main module first, then the dependencies ("path version", a
// replaced module as "path version => replacement version").
func goModules(binary string) (string, error) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return "", fmt.Errorf("reading the Go build info of %s (is it a Go binary?): %w", binary, err)
	}
	return formatModules(bi), nil
}

func formatModules(bi *debug.BuildInfo) string {
	lines := []string{bi.Path + " " + bi.Main.Version}
	for _, d := range bi.Deps {
		line := d.Path + " " + d.Version
		if d.Replace != nil {
			line += " => " + d.Replace.Path + " " + d.Replace.Version
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
