// Command release builds the router's OCI image without a Docker engine,
// for scripts/release.sh: a multi-arch image index (one image per
// linux/ARCH static binary) on a base layer built here (CA certificates,
// /etc/passwd and /etc/group with the nonroot user 65532, a /tmp), with
// the Dockerfile's user, entrypoint, command and OCI labels, written as an
// OCI image layout tarball.
//
// It is a module of its own so that go-containerregistry stays out of the
// router's go.mod: the router does not link it, and those who build or
// vendor the router never fetch it.
//
//	go run . image --out dist/image.oci.tar --version v0.1.0 --revision SHA \
//	  --created 2026-12-04T00:00:00Z --binary linux/amd64=dist/.../router ...
package main
