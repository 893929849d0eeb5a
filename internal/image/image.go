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
	"encoding/json"
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
	"github.com/google/go-containerregistry/pkg/v1/types"
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
	// User is who the entrypoint runs as ("uid:gid", or a name of the
	// image's /etc/passwd: root or nonroot); empty means NonRootUser.
	User string
	// NetBindService gives the binary the file capability
	// cap_net_bind_service=ep, as `setcap` would, so that a non-root user
	// can listen on a port below 1024 (a DNS server on 53) when the
	// container's capabilities allow it, without running as root. The
	// capability travels as an extended attribute of the layer's tar entry,
	// which container runtimes restore when they unpack the layer.
	NetBindService bool
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
	layerTar, err := layerContent(spec.Path, bin, spec.NetBindService, spec.Created.UTC())
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
	cfg.Config.User = spec.User
	if cfg.Config.User == "" {
		cfg.Config.User = NonRootUser
	}
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

// WriteAll writes several images into one tarball at file, each tagged
// with its reference (the map's key), so that one `ctr images import` or
// `docker load` loads them all. The archive is the one tarball.Write makes
// (manifest.json naming the config and layer files of each image), but its
// entries come in the order of the references, not in map order, so that
// the same images give the same file byte for byte. Images with the same
// digest are written once, with all their tags.
func WriteAll(images map[string]v1.Image, file string) error {
	if len(images) == 0 {
		return errors.New("no images to write")
	}
	refs := make([]string, 0, len(images))
	for ref := range images {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	var manifest tarball.Manifest
	var order []v1.Image          // the image of each manifest entry
	byDigest := map[v1.Hash]int{} // manifest entry of an image digest
	for _, ref := range refs {
		tag, err := name.NewTag(ref, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("image reference %q: %w", ref, err)
		}
		img := images[ref]
		digest, err := img.Digest()
		if err != nil {
			return fmt.Errorf("image %s: %w", ref, err)
		}
		if i, ok := byDigest[digest]; ok {
			manifest[i].RepoTags = append(manifest[i].RepoTags, tag.String())
			continue
		}
		d, err := describe(img)
		if err != nil {
			return fmt.Errorf("image %s: %w", ref, err)
		}
		d.RepoTags = []string{tag.String()}
		byDigest[digest] = len(manifest)
		manifest = append(manifest, d)
		order = append(order, img)
	}
	tmp := file + ".tmp"
	if err := writeArchive(tmp, manifest, order); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// describe names the files of img in the archive the way tarball.Write
// does: the config by its digest, each layer by its digest's hex and an
// extension saying how it is compressed.
func describe(img v1.Image) (tarball.Descriptor, error) {
	cfg, err := img.ConfigName()
	if err != nil {
		return tarball.Descriptor{}, fmt.Errorf("reading the config digest: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return tarball.Descriptor{}, fmt.Errorf("reading the layers: %w", err)
	}
	d := tarball.Descriptor{Config: cfg.String()}
	for _, l := range layers {
		digest, err := l.Digest()
		if err != nil {
			return tarball.Descriptor{}, fmt.Errorf("reading a layer digest: %w", err)
		}
		mt, err := l.MediaType()
		if err != nil {
			return tarball.Descriptor{}, fmt.Errorf("reading a layer media type: %w", err)
		}
		ext := ".tar.gz"
		switch mt {
		case types.OCILayerZStd:
			ext = ".tar.zst"
		case types.OCIUncompressedLayer, types.OCIUncompressedRestrictedLayer, types.DockerUncompressedLayer:
			ext = ".tar"
		}
		d.Layers = append(d.Layers, digest.Hex+ext)
	}
	return d, nil
}

// writeArchive writes the files of manifest, each once, then
// manifest.json itself.
func writeArchive(file string, manifest tarball.Manifest, images []v1.Image) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	written := map[string]bool{}
	add := func(name string, open func() (io.ReadCloser, error), size int64) error {
		if written[name] {
			return nil
		}
		written[name] = true
		r, err := open()
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		defer r.Close()
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, r); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		return nil
	}
	blob := func(data []byte) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	for i, d := range manifest {
		img := images[i]
		cfg, err := img.RawConfigFile()
		if err != nil {
			return fmt.Errorf("reading the config of %s: %w", d.RepoTags[0], err)
		}
		if err := add(d.Config, blob(cfg), int64(len(cfg))); err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return fmt.Errorf("reading the layers of %s: %w", d.RepoTags[0], err)
		}
		for j, l := range layers {
			size, err := l.Size()
			if err != nil {
				return fmt.Errorf("reading the size of %s: %w", d.Layers[j], err)
			}
			if err := add(d.Layers[j], l.Compressed, size); err != nil {
				return err
			}
		}
	}
	m, err := json.Marshal(manifest)
	if err != nil {
		return fmt.Errorf("encoding manifest.json: %w", err)
	}
	if err := add("manifest.json", blob(m), int64(len(m))); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// capNetBindService is the value of the security.capability extended
// attribute that `setcap cap_net_bind_service=ep` writes: struct
// vfs_cap_data of <linux/capability.h>, little-endian, revision 2 with the
// effective flag (0x02000001), then the permitted and inheritable words of
// capabilities 0-31 and 32-63; CAP_NET_BIND_SERVICE is bit 10 of the first
// permitted word.
var capNetBindService = string([]byte{
	0x01, 0x00, 0x00, 0x02, // magic_etc
	0x00, 0x04, 0x00, 0x00, // data[0].permitted
	0x00, 0x00, 0x00, 0x00, // data[0].inheritable
	0x00, 0x00, 0x00, 0x00, // data[1].permitted
	0x00, 0x00, 0x00, 0x00, // data[1].inheritable
})

// paxCapability is the PAX record under which tar (GNU tar --xattrs,
// Docker, containerd) carries the file capability.
const paxCapability = "SCHILY.xattr.security.capability"

// layerContent is the layer's tar: the directories down to the binary,
// the binary (root-owned, 0755, with cap_net_bind_service when
// netBindService), and /etc/passwd and /etc/group naming the non-root
// user, all with modification time created.
func layerContent(binPath string, bin []byte, netBindService bool, created time.Time) ([]byte, error) {
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
	var binPAX map[string]string
	if netBindService {
		binPAX = map[string]string{paxCapability: capNetBindService}
	}
	files := []struct {
		name string
		mode int64
		data []byte
		pax  map[string]string
	}{
		{"etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n"), nil},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), nil},
		{strings.TrimPrefix(binPath, "/"), 0o755, bin, binPAX},
	}
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: created, PAXRecords: f.pax, Format: tar.FormatPAX}
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
