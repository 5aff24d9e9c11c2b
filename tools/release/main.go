package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: release image FLAGS | release inspect TARBALL")
	}
	switch args[0] {
	case "image":
		return buildCommand(args[1:], stdout)
	case "inspect":
		if len(args) != 2 {
			return fmt.Errorf("usage: release inspect TARBALL")
		}
		return inspect(args[1], stdout)
	}
	return fmt.Errorf("unknown command %q: image or inspect", args[0])
}

type binaryFlags map[string]string

func (b binaryFlags) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaryFlags) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if !ok || platform == "" || path == "" {
		return fmt.Errorf("%q: want linux/ARCH=PATH", v)
	}
	b[platform] = path
	return nil
}

func buildCommand(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	spec := imageSpec{Binaries: binaryFlags{}}
	out := fs.String("out", "", "the OCI layout tarball to write")
	created := fs.String("created", "", "creation time, RFC 3339 (the commit's time, for reproducible digests)")
	caFile := fs.String("ca-certs", defaultCert, "PEM bundle of CA roots for /etc/ssl/certs/ca-certificates.crt")
	fs.StringVar(&spec.Version, "version", "", "org.opencontainers.image.version")
	fs.StringVar(&spec.Revision, "revision", "", "org.opencontainers.image.revision")
	fs.StringVar(&spec.Source, "source", "https://github.com/sidestream/sidestream", "org.opencontainers.image.source")
	fs.StringVar(&spec.Licenses, "licenses", "Apache-2.0", "org.opencontainers.image.licenses")
	fs.StringVar(&spec.RefName, "ref-name", "", "the index's name in index.json (default: the version)")
	fs.Var(binaryFlags(spec.Binaries), "binary", "linux/ARCH=PATH of a static router binary (repeat per platform)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || spec.Version == "" || spec.Revision == "" {
		return fmt.Errorf("image: --out, --version and --revision are required")
	}
	t, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		return fmt.Errorf("image: --created %q: %w", *created, err)
	}
	spec.Created = t
	if spec.RefName == "" {
		spec.RefName = spec.Version
	}
	if spec.CACerts, err = os.ReadFile(*caFile); err != nil {
		return fmt.Errorf("image: --ca-certs: %w", err)
	}
	idx, err := buildIndex(spec)
	if err != nil {
		return err
	}
	if err := writeLayoutTar(idx, spec.RefName, *out, t); err != nil {
		return err
	}
	return inspect(*out, stdout)
}

// inspect prints what a layout tarball holds: one JSON line per image.
func inspect(tarPath string, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "sidestream-oci-read-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ref, imgs, err := readLayoutTar(tarPath, dir)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for _, pi := range imgs {
		c := pi.Config.Config
		if err := enc.Encode(map[string]any{"ref": ref, "platform": pi.Platform, "bytes": pi.Size, "user": c.User,
			"entrypoint": c.Entrypoint, "cmd": c.Cmd, "version": c.Labels["org.opencontainers.image.version"]}); err != nil {
			return err
		}
	}
	return nil
}
