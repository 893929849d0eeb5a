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
)

// module describes how one embedded module produces its binaries.
type module struct {
	// dir is the folder under modules/.
	dir string
	// packages maps a binary name to the Go package that builds it.
	packages map[string]string
	// ldflags are extra linker flags (part of the cache key).
	ldflags string
}

// modules lists every component module; the order is the build order, cheapest first.
var modules = []module{
	{dir: "etcd", packages: map[string]string{Etcd: "."}},
	{dir: "kwok", packages: map[string]string{Kwok: "sigs.k8s.io/kwok/cmd/kwok"}},
	{dir: "kubernetes", packages: map[string]string{
		KubeAPIServer:         "k8s.io/kubernetes/cmd/kube-apiserver",
		KubeControllerManager: "k8s.io/kubernetes/cmd/kube-controller-manager",
		KubeScheduler:         "k8s.io/kubernetes/cmd/kube-scheduler",
		Kubectl:               "k8s.io/kubernetes/cmd/kubectl",
	}, ldflags: kubernetesVersionFlags(KubernetesVersion)},
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

// Key identifies the pinned component set together with the Go toolchain.
func Key() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, m := range modules {
		fmt.Fprintf(h, "ldflags %s %s\n", m.dir, m.ldflags)
	}
	var paths []string
	err := fs.WalkDir(moduleFiles, "modules", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("listing embedded component modules: %w", err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data, err := moduleFiles.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("reading embedded %s: %w", p, err)
		}
		fmt.Fprintf(h, "%s %d\n", p, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Ensure returns the component binaries, building whatever is missing from the
// cache first. Progress goes to out. Concurrent callers (two `lifeboat up` in
// different state directories, parallel tests) serialise on a lock file.
func Ensure(ctx context.Context, cacheDir string, out io.Writer) (Binaries, error) {
	key, err := Key()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(cacheDir, "components", key)
	binDir := filepath.Join(root, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating component cache %s: %w", root, err)
	}
	unlock, err := lock(ctx, filepath.Join(root, ".lock"), out)
	if err != nil {
		return nil, err
	}
	defer unlock()

	bins := Binaries{}
	for _, m := range modules {
		var missing []string
		for name := range m.packages {
			p := filepath.Join(binDir, name)
			bins[name] = p
			if _, err := os.Stat(p); err != nil {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			continue
		}
		sort.Strings(missing)
		if err := buildModule(ctx, m, missing, root, binDir, out); err != nil {
			return nil, err
		}
	}
	return bins, nil
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

	args := []string{"build", "-trimpath", "-ldflags=-s -w " + m.ldflags, "-o", tmp + string(os.PathSeparator)}
	for _, n := range names {
		args = append(args, m.packages[n])
	}
	fmt.Fprintf(out, "Building %s from the Go module proxy (first run only; this can take several minutes)...\n", strings.Join(names, ", "))
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOWORK=off")
	var log strings.Builder
	cmd.Stdout = &log
	cmd.Stderr = &log
	if err := runWithProgress(ctx, cmd, out, start); err != nil {
		return fmt.Errorf("building %s: %w\n%s", strings.Join(names, ", "), err, tail(log.String(), 30))
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
