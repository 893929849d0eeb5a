package components

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

//go:embed modules
var moduleFiles embed.FS

// Binary names of the components.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kubectl               = "kubectl"
	Kwok                  = "kwok"
	// Kyverno is optional: built only when asked for (Ensure's optional
	// names), for `lifeboat up --with-kyverno`.
	Kyverno = "kyverno"
	// KyvernoCRDs is not a binary but the folder of Kyverno's CRD manifests
	// (config/crds of the pinned Kyverno module), copied next to the binary
	// when it is built so that the CRDs always match it.
	KyvernoCRDs = "kyverno-crds"

	// The host cluster's node (`lifeboat up --host-cluster`) needs the
	// optional modules below, each built only when asked for.

	// KubeNode is the optional module of the node agents, Kubelet and
	// KubeProxy, built from the same k8s.io/kubernetes release as the
	// control plane.
	KubeNode  = "kubenode"
	Kubelet   = "kubelet"
	KubeProxy = "kube-proxy"
	// CoreDNS is the optional module, and the binary, of the cluster DNS
	// server.
	CoreDNS = "coredns"
	// Pause is the optional module, and the binary, of the process that
	// holds a pod sandbox's namespaces (the pause container).
	Pause = "pause"
)

// module describes how one embedded module produces its binaries.
type module struct {
	// dir is the folder under modules/.
	dir string
	// packages maps a binary name to the Go package that builds it.
	packages map[string]string
	// ldflags are extra linker flags (part of the cache key).
	ldflags string
	// optional modules are built only when a caller names them. Each is
	// cached under a key of its own, so that adding or changing one never
	// changes Key() nor rebuilds the core set.
	optional bool
	// folders are folders of a dependency module's source copied into the
	// cache after the build, by name (the name is also their key in
	// Binaries).
	folders map[string]moduleFolder
}

// moduleFolder names a folder inside a module of the build list.
type moduleFolder struct {
	module string // module path, e.g. github.com/kyverno/kyverno
	path   string // slash-separated folder inside it, e.g. config/crds
}

// modules lists every component module; the order is the build order,
// cheapest first. The core modules (not optional) make up Key().
var modules = []module{
	{dir: "etcd", packages: map[string]string{Etcd: "."}},
	{dir: "kwok", packages: map[string]string{Kwok: "sigs.k8s.io/kwok/cmd/kwok"}},
	{dir: "kubernetes", packages: map[string]string{
		KubeAPIServer:         "k8s.io/kubernetes/cmd/kube-apiserver",
		KubeControllerManager: "k8s.io/kubernetes/cmd/kube-controller-manager",
		KubeScheduler:         "k8s.io/kubernetes/cmd/kube-scheduler",
		Kubectl:               "k8s.io/kubernetes/cmd/kubectl",
	}, ldflags: kubernetesVersionFlags(KubernetesVersion)},
	{dir: "kyverno", optional: true,
		packages: map[string]string{Kyverno: "github.com/kyverno/kyverno/cmd/kyverno"},
		folders:  map[string]moduleFolder{KyvernoCRDs: {module: "github.com/kyverno/kyverno", path: "config/crds"}},
	},
	{dir: Pause, optional: true, packages: map[string]string{Pause: "."}},
	{dir: CoreDNS, optional: true, packages: map[string]string{CoreDNS: "github.com/coredns/coredns"}},
	{dir: KubeNode, optional: true, packages: map[string]string{
		Kubelet:   "k8s.io/kubernetes/cmd/kubelet",
		KubeProxy: "k8s.io/kubernetes/cmd/kube-proxy",
	}, ldflags: kubernetesVersionFlags(KubernetesVersion)},
}

// Optional lists the names of the optional modules (what Ensure accepts).
func Optional() []string {
	var names []string
	for _, m := range modules {
		if m.optional {
			names = append(names, m.dir)
		}
	}
	return names
}

// KubernetesVersion is the release of the Kubernetes components; it must match
// the k8s.io/kubernetes requirement in modules/kubernetes/go.mod.txt (a unit
// test checks that).
const KubernetesVersion = "v1.35.4"

// kubernetesVersionFlags stamps the version the way Kubernetes' own release
// build does, so that members report it (kubectl version, Cluster
// status.kubernetesVersion) instead of a placeholder.
func kubernetesVersionFlags(v string) string {
	major, minor := "1", ""
	if parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X "+pkg+".gitVersion="+v,
			"-X "+pkg+".gitMajor="+major,
			"-X "+pkg+".gitMinor="+minor,
			"-X "+pkg+".gitTreeState=clean",
		)
	}
	return strings.Join(flags, " ")
}

// Binaries maps a component name to the absolute path of its built binary.
type Binaries map[string]string

// Path returns the binary of a component; it panics on an unknown name, which
// is a programming error.
func (b Binaries) Path(name string) string {
	p, ok := b[name]
	if !ok {
		panic(fmt.Sprintf("components: unknown component %q", name))
	}
	return p
}

// DefaultCacheDir is where components are built unless the user says otherwise:
// $LIFEBOAT_CACHE_DIR, else the user cache directory (~/.cache/lifeboat).
func DefaultCacheDir() string {
	if d := os.Getenv("LIFEBOAT_CACHE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "lifeboat")
	}
	return filepath.Join(os.TempDir(), "lifeboat-cache")
}

// Key identifies the pinned core component set (every module that is not
// optional) together with the Go toolchain. Optional modules have keys of
// their own (see Ensure), so that adding one keeps this key, and the cache
// built under it, as it was.
func Key() (string, error) {
	var core []module
	for _, m := range modules {
		if !m.optional {
			core = append(core, m)
		}
	}
	return keyOf(moduleFiles, core)
}

// keyOf hashes the Go toolchain, the modules' linker flags and the files of
// their folders under modules/ in fsys.
func keyOf(fsys fs.FS, mods []module) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	dirs := map[string]bool{}
	for _, m := range mods {
		fmt.Fprintf(h, "ldflags %s %s\n", m.dir, m.ldflags)
		dirs[m.dir] = true
	}
	var paths []string
	err := fs.WalkDir(fsys, "modules", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rest, ok := strings.CutPrefix(p, "modules/"); ok && !strings.Contains(rest, "/") && !dirs[rest] {
				return fs.SkipDir
			}
			return nil
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("listing embedded component modules: %w", err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return "", fmt.Errorf("reading embedded %s: %w", p, err)
		}
		fmt.Fprintf(h, "%s %d\n", p, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Ensure returns the core component binaries, and those of the optional
// modules named (see Optional), building whatever is missing from the cache
// first. Progress goes to out. Concurrent callers (two `lifeboat up` in
// different state directories, parallel tests) serialise on a lock file per
// set: the core set under DIR/components/KEY, each optional module under
// DIR/components/NAME-KEY with a key of its own.
func Ensure(ctx context.Context, cacheDir string, out io.Writer, optional ...string) (Binaries, error) {
	var core []module
	byName := map[string]module{}
	for _, m := range modules {
		if m.optional {
			byName[m.dir] = m
		} else {
			core = append(core, m)
		}
	}
	for _, name := range optional {
		if _, ok := byName[name]; !ok {
			return nil, fmt.Errorf("no optional component %q (optional: %v)", name, Optional())
		}
	}
	key, err := Key()
	if err != nil {
		return nil, err
	}
	bins := Binaries{}
	if err := ensureSet(ctx, filepath.Join(cacheDir, "components", key), core, bins, out); err != nil {
		return nil, err
	}
	for _, name := range optional {
		m := byName[name]
		key, err := keyOf(moduleFiles, []module{m})
		if err != nil {
			return nil, err
		}
		if err := ensureSet(ctx, filepath.Join(cacheDir, "components", m.dir+"-"+key), []module{m}, bins, out); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

// ensureSet builds whatever the modules lack under root, holding root's
// lock, and records every binary and folder in bins.
func ensureSet(ctx context.Context, root string, mods []module, bins Binaries, out io.Writer) error {
	binDir := filepath.Join(root, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("creating component cache %s: %w", root, err)
	}
	unlock, err := lock(ctx, filepath.Join(root, ".lock"), out)
	if err != nil {
		return err
	}
	defer unlock()

	for _, m := range mods {
		var missing []string
		for name := range m.packages {
			p := filepath.Join(binDir, name)
			bins[name] = p
			if _, err := os.Stat(p); err != nil {
				missing = append(missing, name)
			}
		}
		folderMissing := false
		for name := range m.folders {
			p := filepath.Join(root, name)
			bins[name] = p
			if _, err := os.Stat(p); err != nil {
				folderMissing = true
			}
		}
		if len(missing) == 0 && !folderMissing {
			continue
		}
		sort.Strings(missing)
		if err := buildModule(ctx, m, missing, root, binDir, out); err != nil {
			return err
		}
	}
	return nil
}

// buildModule writes one embedded module into the cache and builds the named binaries.
func buildModule(ctx context.Context, m module, names []string, root, binDir string, out io.Writer) error {
	src := filepath.Join(root, "src", m.dir)
	if err := writeModule(m.dir, src); err != nil {
		return err
	}
	// Build into a temporary folder and rename, so that an interrupted build
	// never leaves a half-written binary that a later run would trust.
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return fmt.Errorf("creating build folder: %w", err)
	}
	defer os.RemoveAll(tmp)

	start := time.Now()
	if len(names) > 0 {
		args := []string{"build", "-trimpath", "-ldflags=-s -w " + m.ldflags, "-o", tmp + string(os.PathSeparator)}
		for _, n := range names {
			args = append(args, m.packages[n])
		}
		fmt.Fprintf(out, "Building %s from the Go module proxy (first run only; this can take several minutes)...\n", strings.Join(names, ", "))
		cmd := goCommand(ctx, src, args...)
		var log strings.Builder
		cmd.Stdout = &log
		cmd.Stderr = &log
		if err := runWithProgress(ctx, cmd, out, start); err != nil {
			return fmt.Errorf("building %s: %w\n%s", strings.Join(names, ", "), err, tail(log.String(), 30))
		}
	}
	if err := copyFolders(ctx, m, src, root); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	for _, n := range names {
		built := filepath.Join(tmp, n)
		if len(m.packages) == 1 && m.packages[n] == "." {
			// `go build -o dir/ .` names the binary after the module's last element.
			built = filepath.Join(tmp, filepath.Base(modulePath(src)))
		}
		if err := os.Rename(built, filepath.Join(binDir, n)); err != nil {
			return fmt.Errorf("installing %s: %w", n, err)
		}
	}
	fmt.Fprintf(out, "Built %s in %s.\n", strings.Join(names, ", "), time.Since(start).Round(time.Second))
	return nil
}

// runWithProgress runs cmd and prints a line every 30 seconds so that a long
// first build does not look like a hang.
func runWithProgress(ctx context.Context, cmd *exec.Cmd, out io.Writer, start time.Time) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			fmt.Fprintf(out, "  still building (%s)...\n", time.Since(start).Round(time.Second))
		case <-ctx.Done():
			return errors.Join(ctx.Err(), <-done)
		}
	}
}

// goCommand runs the go tool in the module folder src, resolving modules
// from go.mod and go.sum as written (no workspace, no cgo).
func goCommand(ctx context.Context, src string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOWORK=off")
	return cmd
}

// copyFolders copies each of m's folders out of the module cache into
// root/NAME, through a temporary folder and a rename, like the binaries.
func copyFolders(ctx context.Context, m module, src, root string) error {
	for name, f := range m.folders {
		dst := filepath.Join(root, name)
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		cmd := goCommand(ctx, src, "list", "-m", "-f", "{{.Dir}}", f.module)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		dirOut, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("locating module %s: %w\n%s", f.module, err, tail(stderr.String(), 10))
		}
		from := filepath.Join(strings.TrimSpace(string(dirOut)), filepath.FromSlash(f.path))
		tmp, err := os.MkdirTemp(root, "copy-")
		if err != nil {
			return fmt.Errorf("creating copy folder: %w", err)
		}
		if err := os.CopyFS(tmp, os.DirFS(from)); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("copying %s of %s: %w", f.path, f.module, err)
		}
		if err := os.Rename(tmp, dst); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("installing %s: %w", name, err)
		}
	}
	return nil
}

func writeModule(dir, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dst, err)
	}
	entries, err := moduleFiles.ReadDir("modules/" + dir)
	if err != nil {
		return fmt.Errorf("reading embedded module %s: %w", dir, err)
	}
	for _, e := range entries {
		data, err := moduleFiles.ReadFile("modules/" + dir + "/" + e.Name())
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(e.Name(), ".txt")
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

func modulePath(src string) string {
	data, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module "))
		}
	}
	return ""
}

// lock takes an exclusive flock on path, waiting (and saying so) while another
// process holds it.
func lock(ctx context.Context, path string, out io.Writer) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !said {
			fmt.Fprintln(out, "Waiting for another lifeboat process that is building the components...")
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
