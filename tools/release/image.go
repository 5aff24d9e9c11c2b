package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's runtime settings, as the Dockerfile has them.
const (
	imageUser   = "65532:65532"
	binaryPath  = "/router"
	defaultCert = "/etc/ssl/certs/ca-certificates.crt"
	refNameKey  = "org.opencontainers.image.ref.name"
)

var (
	imageEntrypoint = []string{binaryPath}
	imageCmd        = []string{"run", "--config", "/etc/sidestream/topology.yaml"}
)

// imageSpec is what one image index is built from.
type imageSpec struct {
	Version  string
	Revision string
	Created  time.Time
	Source   string
	Licenses string
	// RefName names the index in the layout's index.json (a tag).
	RefName string
	// CACerts is the PEM bundle copied to /etc/ssl/certs/ca-certificates.crt,
	// where Go's crypto/x509 looks for system roots on Linux.
	CACerts []byte
	// Binaries maps a platform ("linux/amd64") to its static router binary.
	Binaries map[string]string
}

// labels are the OCI annotations of the image config.
func (s imageSpec) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "sidestream router",
		"org.opencontainers.image.description": "Kafka-native router with side outputs and exactly-once output",
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.source":      s.Source,
		"org.opencontainers.image.licenses":    s.Licenses,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
	}
}

// buildIndex builds the multi-arch image index: one image per platform, in
// platform order, each on the same base layer.
func buildIndex(s imageSpec) (v1.ImageIndex, error) {
	if len(s.Binaries) == 0 {
		return nil, fmt.Errorf("no binaries: give at least one --binary linux/ARCH=PATH")
	}
	base, err := baseLayer(s)
	if err != nil {
		return nil, err
	}
	platforms := make([]string, 0, len(s.Binaries))
	for p := range s.Binaries {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, plat, err := buildImage(s, base, p, s.Binaries[p])
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	return idx, nil
}

func buildImage(s imageSpec, base v1.Layer, platform, binary string) (v1.Image, *v1.Platform, error) {
	osName, arch, ok := strings.Cut(platform, "/")
	if !ok || osName != "linux" || arch == "" {
		return nil, nil, fmt.Errorf("platform %q: want linux/ARCH", platform)
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, nil, fmt.Errorf("binary for %s: %w", platform, err)
	}
	app, err := layerOf(s.Created, []file{{name: strings.TrimPrefix(binaryPath, "/"), mode: 0o755, data: bin}})
	if err != nil {
		return nil, nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, base, app)
	if err != nil {
		return nil, nil, fmt.Errorf("layers for %s: %w", platform, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = osName, arch
	cf.Created = v1.Time{Time: s.Created.UTC()}
	cf.Config = v1.Config{
		User:         imageUser,
		Entrypoint:   imageEntrypoint,
		Cmd:          imageCmd,
		Env:          []string{"PATH=/"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels:       s.labels(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, nil, fmt.Errorf("config for %s: %w", platform, err)
	}
	return img, &v1.Platform{OS: osName, Architecture: arch}, nil
}

// baseLayer is the static base: CA roots, the nonroot user's passwd and
// group entries (so tools that resolve 65532 find a name), and /tmp.
func baseLayer(s imageSpec) (v1.Layer, error) {
	if len(s.CACerts) == 0 {
		return nil, fmt.Errorf("no CA certificates: the router's TLS to brokers and registries uses the image's system roots")
	}
	return layerOf(s.Created, []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: s.CACerts},
		{name: "home/", dir: true, mode: 0o755},
		{name: "home/nonroot/", dir: true, mode: 0o700, uid: 65532},
		{name: "tmp/", dir: true, mode: 0o1777},
	})
}

type file struct {
	name string
	dir  bool
	mode int64
	uid  int
	data []byte
}

// layerOf is a gzipped OCI layer of the files, every time stamp the
// release's, so the same inputs give the same digests.
func layerOf(mtime time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// writeLayoutTar writes the index as an OCI image layout (index.json naming
// it with refName) into a tarball at out.
func writeLayoutTar(idx v1.ImageIndex, refName, out string, mtime time.Time) error {
	dir, err := os.MkdirTemp("", "sidestream-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("oci layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameKey: refName})); err != nil {
		return fmt.Errorf("oci layout: %w", err)
	}
	return tarDir(dir, out, mtime)
}

// tarDir archives dir's files (sorted, fixed owner and time) into out.
func tarDir(dir, out string, mtime time.Time) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, n := range names {
		if err := addFile(tw, dir, n, mtime); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func addFile(tw *tar.Writer, dir, name string, mtime time.Time) error {
	st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	h := &tar.Header{Name: name, Mode: 0o644, ModTime: mtime.UTC(), Typeflag: tar.TypeReg, Size: st.Size(), Format: tar.FormatPAX}
	if st.IsDir() {
		h.Name, h.Mode, h.Typeflag, h.Size = path.Clean(name)+"/", 0o755, tar.TypeDir, 0
		return tw.WriteHeader(h)
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	r, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(tw, r)
	return err
}
