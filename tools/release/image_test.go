package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

var created = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func testSpec(t *testing.T) imageSpec {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		p := filepath.Join(dir, "router-"+arch)
		if err := os.WriteFile(p, []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		bins["linux/"+arch] = p
	}
	return imageSpec{Version: "v0.1.0", Revision: "0123abc", Created: created, Source: "https://github.com/sidestream/sidestream",
		Licenses: "Apache-2.0", RefName: "v0.1.0", CACerts: []byte("-----BEGIN CERTIFICATE-----\n"), Binaries: bins}
}

// build writes the spec's image as a layout tarball and reads it back.
func build(t *testing.T, s imageSpec) (string, []platformImage, string) {
	t.Helper()
	idx, err := buildIndex(s)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.oci.tar")
	if err := writeLayoutTar(idx, s.RefName, out, s.Created); err != nil {
		t.Fatal(err)
	}
	ref, imgs, err := readLayoutTar(out, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ref, imgs, out
}

// files is an image's flattened file system: path -> header and content.
func files(t *testing.T, img v1.Image) map[string]fileEntry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]fileEntry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, "/")] = fileEntry{h: h, data: b}
	}
}

type fileEntry struct {
	h    *tar.Header
	data []byte
}

// checkConfig checks what the Dockerfile promises of every image.
func checkConfig(t *testing.T, pi platformImage, version, revision string) {
	t.Helper()
	c := pi.Config.Config
	if c.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532", pi.Platform, c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/router"}) {
		t.Errorf("%s: entrypoint %q", pi.Platform, c.Entrypoint)
	}
	if !slices.Equal(c.Cmd, []string{"run", "--config", "/etc/sidestream/topology.yaml"}) {
		t.Errorf("%s: cmd %q", pi.Platform, c.Cmd)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("%s: 8080/tcp not exposed: %v", pi.Platform, c.ExposedPorts)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version": version, "org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source": "https://github.com/sidestream/sidestream", "org.opencontainers.image.licenses": "Apache-2.0",
	} {
		if got := c.Labels[k]; got != want {
			t.Errorf("%s: label %s = %q, want %q", pi.Platform, k, got, want)
		}
	}
	if _, err := time.Parse(time.RFC3339, c.Labels["org.opencontainers.image.created"]); err != nil {
		t.Errorf("%s: label created: %v", pi.Platform, err)
	}
	if want := strings.Split(pi.Platform, "/"); pi.Config.OS != want[0] || pi.Config.Architecture != want[1] {
		t.Errorf("%s: config says %s/%s", pi.Platform, pi.Config.OS, pi.Config.Architecture)
	}
}

func TestImage(t *testing.T) {
	s := testSpec(t)
	ref, imgs, _ := build(t, s)
	if ref != "v0.1.0" {
		t.Errorf("index.json names the index %q, want v0.1.0", ref)
	}
	var platforms []string
	for _, pi := range imgs {
		platforms = append(platforms, pi.Platform)
		checkConfig(t, pi, "v0.1.0", "0123abc")
		if got := pi.Config.Config.Labels["org.opencontainers.image.created"]; got != "2026-12-04T12:00:00Z" {
			t.Errorf("created label %q", got)
		}
		fs := files(t, pi.Image)
		arch := strings.TrimPrefix(pi.Platform, "linux/")
		r, ok := fs["router"]
		if !ok || string(r.data) != "binary for "+arch || r.h.Mode&0o777 != 0o755 {
			t.Errorf("%s: /router is %+v, want this platform's binary, mode 0755", pi.Platform, r)
		}
		if !bytes.Equal(fs["etc/ssl/certs/ca-certificates.crt"].data, s.CACerts) {
			t.Errorf("%s: the CA roots are not at /etc/ssl/certs/ca-certificates.crt", pi.Platform)
		}
		if !strings.Contains(string(fs["etc/passwd"].data), ":65532:65532:") {
			t.Errorf("%s: /etc/passwd has no user 65532", pi.Platform)
		}
		if tmp, ok := fs["tmp"]; !ok || tmp.h.Mode&0o7777 != 0o1777 {
			t.Errorf("%s: /tmp missing or not 1777", pi.Platform)
		}
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
}

// TestImageReproducible: the same inputs give the same tarball.
func TestImageReproducible(t *testing.T) {
	s := testSpec(t)
	_, _, a := build(t, s)
	_, _, b := build(t, s)
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Error("two builds of the same inputs differ")
	}
}

func TestImageRefusals(t *testing.T) {
	s := testSpec(t)
	s.CACerts = nil
	if _, err := buildIndex(s); err == nil || !strings.Contains(err.Error(), "CA certificates") {
		t.Errorf("no CA roots: %v", err)
	}
	s = testSpec(t)
	s.Binaries = map[string]string{"darwin/arm64": s.Binaries["linux/arm64"]}
	if _, err := buildIndex(s); err == nil || !strings.Contains(err.Error(), "want linux/ARCH") {
		t.Errorf("darwin image: %v", err)
	}
}

// TestReleaseImage checks the image scripts/release.sh built, when it
// names it: SIDESTREAM_RELEASE_IMAGE (the tarball) and
// SIDESTREAM_RELEASE_VERSION, SIDESTREAM_RELEASE_REVISION.
func TestReleaseImage(t *testing.T) {
	path := os.Getenv("SIDESTREAM_RELEASE_IMAGE")
	if path == "" {
		t.Skip("SIDESTREAM_RELEASE_IMAGE not set (scripts/release.sh sets it)")
	}
	version := os.Getenv("SIDESTREAM_RELEASE_VERSION")
	ref, imgs, err := readLayoutTar(path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ref != version {
		t.Errorf("index.json names the index %q, want %q", ref, version)
	}
	machines := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}
	if len(imgs) != len(machines) {
		t.Errorf("%d images, want %d", len(imgs), len(machines))
	}
	for _, pi := range imgs {
		checkConfig(t, pi, version, os.Getenv("SIDESTREAM_RELEASE_REVISION"))
		r, ok := files(t, pi.Image)["router"]
		if !ok {
			t.Fatalf("%s: no /router", pi.Platform)
		}
		f, err := elf.NewFile(bytes.NewReader(r.data))
		if err != nil {
			t.Fatalf("%s: /router is not an ELF binary: %v", pi.Platform, err)
		}
		if want, ok := machines[pi.Platform]; !ok || f.Machine != want {
			t.Errorf("%s: /router is built for %v", pi.Platform, f.Machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: /router is dynamically linked", pi.Platform)
			}
		}
	}
}
