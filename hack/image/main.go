// Command image builds Lifeboat's container image from a static binary
// (see internal/image) and prints its digest. `make image` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	binary := fs.String("binary", "", "Static lifeboat binary to put into the image.")
	out := fs.String("out", "", "Tarball to write.")
	ref := fs.String("tag", "", "Image reference the tarball is tagged with, e.g. ghcr.io/lifeboat-dev/lifeboat:v0.3.0.")
	version := fs.String("version", "", "Version label (org.opencontainers.image.version).")
	revision := fs.String("revision", "", "Git revision label (org.opencontainers.image.revision).")
	source := fs.String("source", "https://github.com/lifeboat-dev/lifeboat", "Source label (org.opencontainers.image.source).")
	created := fs.String("created", "0", "Creation time in Unix seconds (the commit time keeps builds reproducible).")
	arch := fs.String("arch", "amd64", "The binary's architecture.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binary == "" || *out == "" || *ref == "" {
		return fmt.Errorf("--binary, --out and --tag are required")
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil || secs < 0 {
		return fmt.Errorf("--created must be Unix seconds, got %q", *created)
	}
	when := time.Unix(secs, 0).UTC()
	img, err := image.Build(image.Spec{
		Binary: *binary,
		Path:   "/usr/local/bin/lifeboat",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "lifeboat",
			"org.opencontainers.image.version":  *version,
			"org.opencontainers.image.revision": *revision,
			"org.opencontainers.image.source":   *source,
			"org.opencontainers.image.created":  when.Format(time.RFC3339),
		},
		Created:      when,
		OS:           "linux",
		Architecture: *arch,
	})
	if err != nil {
		return err
	}
	if err := image.Write(img, *ref, *out); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	size, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s (%.1f MiB) %s\n", *ref, digest, float64(size.Size())/(1<<20), *out)
	return nil
}
