package image

import (
	"archive/tar"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testBinary is a Go binary with build info to put into images: the test
// binary itself.
func testBinary(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func spec(t *testing.T) Spec {
	return Spec{
		Binary:       testBinary(t),
		Path:         "/usr/local/bin/lifeboat",
		Args:         []string{"controller-manager"},
		Labels:       map[string]string{"org.opencontainers.image.version": "v0.0.1"},
		Created:      time.Unix(1764115200, 0),
		OS:           "linux",
		Architecture: "amd64",
	}
}

// Two builds of the same inputs are the same image, and the same tarball
// byte for byte.
func TestBuildIsReproducible(t *testing.T) {
	dir := t.TempDir()
	var digests []string
	var tarballs [][]byte
	for i := range 2 {
		img, err := Build(spec(t))
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
		file := filepath.Join(dir, "image"+string(rune('a'+i))+".tar")
		if err := Write(img, "ghcr.io/lifeboat-dev/lifeboat:v0.0.1", file); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		tarballs = append(tarballs, data)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds gave digests %s and %s", digests[0], digests[1])
	}
	if !bytes.Equal(tarballs[0], tarballs[1]) {
		t.Error("two builds wrote different tarballs")
	}
	// Another creation time is another image.
	s := spec(t)
	s.Created = s.Created.Add(time.Second)
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d.String() == digests[0] {
		t.Error("a different creation time gave the same digest")
	}
}

// The tarball loads back (as docker load reads it) with the tag, the
// config and the one layer holding the binary, owned by root and run by
// the non-root user.
func TestWriteLoadsBack(t *testing.T) {
	img, err := Build(spec(t))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "lifeboat.tar")
	const ref = "ghcr.io/lifeboat-dev/lifeboat:v0.0.1"
	if err := Write(img, ref, file); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatalf("loading the tarball: %v", err)
	}
	want, _ := img.Digest()
	if got, _ := loaded.Digest(); got != want {
		t.Errorf("loaded digest %s, built %s", got, want)
	}
	cfg, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	switch {
	case cfg.OS != "linux" || cfg.Architecture != "amd64":
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	case c.User != NonRootUser:
		t.Errorf("user %q, want %s", c.User, NonRootUser)
	case strings.Join(c.Entrypoint, " ") != "/usr/local/bin/lifeboat" || strings.Join(c.Cmd, " ") != "controller-manager":
		t.Errorf("entrypoint %v, cmd %v", c.Entrypoint, c.Cmd)
	case c.Labels["org.opencontainers.image.version"] != "v0.0.1":
		t.Errorf("labels %v", c.Labels)
	case !strings.HasPrefix(c.Labels[LabelGoModules], "github.com/lifeboat-dev/lifeboat/internal/image.test "):
		t.Errorf("module list label does not start with the binary's main package:\n%s", c.Labels[LabelGoModules])
	case !cfg.Created.Time.Equal(time.Unix(1764115200, 0)):
		t.Errorf("created %s", cfg.Created.Time)
	}

	layers, err := loaded.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	bin, err := os.ReadFile(testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	seen := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = h
		if h.Name == "usr/local/bin/lifeboat" {
			data, _ := io.ReadAll(tr)
			if !bytes.Equal(data, bin) {
				t.Error("the binary in the layer differs from the one given")
			}
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(1764115200, 0)) {
			t.Errorf("%s: owner %d:%d, mtime %s", h.Name, h.Uid, h.Gid, h.ModTime)
		}
	}
	for _, want := range []string{"usr/", "usr/local/", "usr/local/bin/", "etc/", "etc/passwd", "etc/group", "usr/local/bin/lifeboat"} {
		if seen[want] == nil {
			t.Errorf("layer lacks %s (has %v)", want, keys(seen))
		}
	}
	if h := seen["usr/local/bin/lifeboat"]; h != nil && h.Mode != 0o755 {
		t.Errorf("binary mode %o, want 755", h.Mode)
	}
	if _, shell := seen["bin/sh"]; shell {
		t.Error("the image has a shell")
	}
}

func TestBuildRefusesBadInput(t *testing.T) {
	cases := map[string]struct {
		mutate func(s *Spec)
		want   string
	}{
		"relative path":   {func(s *Spec) { s.Path = "usr/bin/lifeboat" }, "clean absolute file path"},
		"unclean path":    {func(s *Spec) { s.Path = "/usr/../bin/lifeboat" }, "clean absolute file path"},
		"root":            {func(s *Spec) { s.Path = "/" }, "clean absolute file path"},
		"no platform":     {func(s *Spec) { s.OS = "" }, "OS and architecture"},
		"missing binary":  {func(s *Spec) { s.Binary = filepath.Join(t.TempDir(), "nope") }, "reading the binary"},
		"not a Go binary": {func(s *Spec) { s.Binary = writeFile(t, "not go") }, "is it a Go binary?"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec(t)
			tc.mutate(&s)
			if _, err := Build(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	img, err := Build(spec(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(img, "Not A Reference!", filepath.Join(t.TempDir(), "x.tar")); err == nil {
		t.Error("a bad image reference was accepted")
	}
}

func TestFormatModules(t *testing.T) {
	bi := &debug.BuildInfo{
		Path: "github.com/lifeboat-dev/lifeboat/cmd/lifeboat",
		Main: debug.Module{Path: "github.com/lifeboat-dev/lifeboat", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "k8s.io/api", Version: "v0.35.4"},
			{Path: "example.com/forked", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.0.1"}},
		},
	}
	want := "github.com/lifeboat-dev/lifeboat/cmd/lifeboat (devel)\nk8s.io/api v0.35.4\nexample.com/forked v1.0.0 => example.com/fork v1.0.1"
	if got := formatModules(bi); got != want {
		t.Errorf("formatModules =\n%s\nwant\n%s", got, want)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func keys(m map[string]*tar.Header) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The user is NonRootUser unless the spec names another.
func TestBuildUser(t *testing.T) {
	cases := map[string]struct{ user, want string }{
		"default": {"", NonRootUser},
		"root":    {"0:0", "0:0"},
		"by name": {"nonroot", "nonroot"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec(t)
			s.User = tc.user
			img, err := Build(s)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Config.User != tc.want {
				t.Errorf("user %q, want %q", cfg.Config.User, tc.want)
			}
		})
	}
}

// NetBindService puts on the binary's tar entry the extended attribute
// that `setcap cap_net_bind_service=ep` writes, and nothing otherwise.
func TestNetBindService(t *testing.T) {
	// getfattr -e hex -n security.capability after setcap cap_net_bind_service=ep.
	const setcap = "0100000200040000000000000000000000000000"
	cases := map[string]struct {
		on   bool
		want string
	}{
		"off": {false, ""},
		"on":  {true, setcap},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := layerContent("/coredns", []byte("bin"), tc.on, time.Unix(0, 0))
			if err != nil {
				t.Fatal(err)
			}
			tr := tar.NewReader(bytes.NewReader(data))
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got := hex.EncodeToString([]byte(h.PAXRecords[paxCapability]))
				want := ""
				if h.Name == "coredns" {
					want = tc.want
				}
				if got != want {
					t.Errorf("%s: capability %q, want %q", h.Name, got, want)
				}
			}
		})
	}
}

// Several images go into one tarball, each loading back under its tag;
// an image under two tags is written once; the same images give the same
// file.
func TestWriteAllLoadsBack(t *testing.T) {
	a, err := Build(spec(t))
	if err != nil {
		t.Fatal(err)
	}
	s := spec(t)
	s.Path, s.Args, s.User = "/pause", nil, "0:0"
	b, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]v1.Image{
		"registry.k8s.io/kube-apiserver:v1.35.4": a,
		"registry.k8s.io/pause:3.10.1":           b,
		"example.com/apiserver-alias:v1":         a,
	}
	dir := t.TempDir()
	var files [][]byte
	for _, f := range []string{"one.tar", "two.tar"} {
		file := filepath.Join(dir, f)
		if err := WriteAll(images, file); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
		for ref, want := range images {
			tag, err := name.NewTag(ref)
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := tarball.ImageFromPath(file, &tag)
			if err != nil {
				t.Fatalf("loading %s: %v", ref, err)
			}
			got, err := loaded.Digest()
			if err != nil {
				t.Fatalf("loading %s: %v", ref, err)
			}
			if w, _ := want.Digest(); got != w {
				t.Errorf("%s: loaded digest %s, built %s", ref, got, w)
			}
		}
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("two writes of the same images differ")
	}
	tr := tar.NewReader(bytes.NewReader(files[0]))
	var names []string
	var manifest tarball.Manifest
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "manifest.json" {
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Two configs, two layers, manifest.json: the alias adds no file.
	if len(names) != 5 || names[len(names)-1] != "manifest.json" {
		t.Errorf("archive entries %v, want two configs, two layers, then manifest.json", names)
	}
	if len(manifest) != 2 || strings.Join(manifest[0].RepoTags, ",") != "example.com/apiserver-alias:v1,registry.k8s.io/kube-apiserver:v1.35.4" {
		t.Errorf("manifest.json %+v, want the API server image under both tags first", manifest)
	}
}

func TestWriteAllRefusesBadInput(t *testing.T) {
	img, err := Build(spec(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]v1.Image{
		"no images":     {},
		"bad reference": {"Not A Reference!": img},
		"no tag":        {"registry.k8s.io/pause": img},
	}
	for name, images := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "x.tar")
			if err := WriteAll(images, file); err == nil {
				t.Error("WriteAll accepted it")
			}
			if _, err := os.Stat(file); err == nil {
				t.Error("WriteAll left a file behind")
			}
		})
	}
}
