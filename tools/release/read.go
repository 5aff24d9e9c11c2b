package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// platformImage is one image of a layout's index, read back.
type platformImage struct {
	Platform string
	Image    v1.Image
	Config   *v1.ConfigFile
	// Size is the image's bytes as pulled: its config and compressed layers.
	Size int64
}

// readLayoutTar unpacks an OCI layout tarball into dir and returns the
// name its index.json gives the one index, and that index's images.
func readLayoutTar(tarPath, dir string) (string, []platformImage, error) {
	if err := untar(tarPath, dir); err != nil {
		return "", nil, err
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", tarPath, err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		return "", nil, err
	}
	if len(tm.Manifests) != 1 {
		return "", nil, fmt.Errorf("%s: index.json has %d entries, want the one image index", tarPath, len(tm.Manifests))
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		return "", nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return "", nil, err
	}
	var out []platformImage
	for _, d := range im.Manifests {
		pi, err := readImage(idx, d)
		if err != nil {
			return "", nil, err
		}
		out = append(out, pi)
	}
	return tm.Manifests[0].Annotations[refNameKey], out, nil
}

func readImage(idx v1.ImageIndex, d v1.Descriptor) (platformImage, error) {
	if d.Platform == nil {
		return platformImage{}, fmt.Errorf("manifest %s has no platform", d.Digest)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		return platformImage{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return platformImage{}, err
	}
	m, err := img.Manifest()
	if err != nil {
		return platformImage{}, err
	}
	size := m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return platformImage{Platform: d.Platform.OS + "/" + d.Platform.Architecture, Image: img, Config: cf, Size: size}, nil
}

func untar(tarPath, dir string) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tarPath, err)
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%s: entry %q leaves the layout", tarPath, h.Name)
		}
		p := filepath.Join(dir, name)
		if h.Typeflag == tar.TypeDir || strings.HasSuffix(h.Name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := writeEntry(p, tr); err != nil {
			return err
		}
	}
}

func writeEntry(p string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	w, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
