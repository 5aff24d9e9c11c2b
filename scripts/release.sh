#!/usr/bin/env bash
# scripts/release.sh - a release's artifacts, into dist/release/, without
# Docker:
#
#   scripts/release.sh --snapshot          # any tree: version 0.0.0-snapshot.<commit>[.dirty]
#   scripts/release.sh --version v0.1.0    # a clean tree; the tag need not exist yet
#   scripts/release.sh                     # a clean tree whose HEAD carries a tag vX.Y.Z
#
# What it writes (VERSION is the tag without its "v"):
#   sidestream_VERSION_OS_ARCH.tar.gz    router (static: CGO_ENABLED=0, -trimpath,
#                                        scripts/build.sh, the tag stamped into
#                                        main.version), LICENSE, NOTICE, README.md,
#                                        CHANGELOG.md; linux and darwin, amd64 and arm64
#   sidestream_VERSION_OS_ARCH.cdx.json  a CycloneDX SBOM of that binary
#                                        (github.com/CycloneDX/cyclonedx-gomod)
#   sidestream_VERSION_image.oci.tar     the linux/amd64 + linux/arm64 image index as
#                                        an OCI image layout (tools/release, on
#                                        go-containerregistry), named VERSION
#   sidestream-CHARTVERSION.tgz          the Helm chart (scripts/helm.sh package),
#                                        appVersion VERSION, so image.tag VERSION
#   SHA256SUMS                           of all of the above
# and checks the image's config by reading the tarball back (the tests of
# tools/release, TestReleaseImage).
#
# Load the image without Docker: `skopeo copy oci-archive:FILE docker://REGISTRY/sidestream/router:VERSION`
# or `crane push FILE ...`; the Dockerfile stays for those who have Docker.
#
# Environment:
#   SIDESTREAM_CYCLONEDX_VERSION  cyclonedx-gomod's module version (default v1.10.0),
#                                 built once into SIDESTREAM_CACHE as scripts/helm.sh builds Helm
#   SIDESTREAM_CACHE              cache folder (default ~/.cache/sidestream)
#   SOURCE_DATE_EPOCH             the time stamped in archives and the image
#                                 (default: the commit's time), for reproducible digests
set -euo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_DIR"
OUT="$REPO_DIR/dist/release"
CDX_VERSION="${SIDESTREAM_CYCLONEDX_VERSION:-v1.10.0}"
CACHE="${SIDESTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sidestream}"
PLATFORMS=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)

die() { echo "scripts/release.sh: $*" >&2; exit 1; }
say() { echo "scripts/release.sh: $*" >&2; }

snapshot="" tag=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --snapshot) snapshot=1 ;;
    --version) [[ $# -ge 2 ]] || die "--version needs a value"; tag="$2"; shift ;;
    --version=*) tag="${1#--version=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (--snapshot, --version vX.Y.Z)" ;;
  esac
  shift
done

revision="$(git rev-parse HEAD)"
dirty=""
[[ -z "$(git status --porcelain)" ]] || dirty=1
if [[ -n "$snapshot" ]]; then
  [[ -z "$tag" ]] || die "--snapshot and --version exclude each other"
  tag="v0.0.0-snapshot.$(git rev-parse --short=12 HEAD)${dirty:+.dirty}"
else
  [[ -z "$dirty" ]] || die "the tree has uncommitted changes: commit them, or build --snapshot"
  if [[ -z "$tag" ]]; then
    tag="$(git describe --exact-match --tags --match 'v[0-9]*' HEAD 2>/dev/null)" ||
      die "HEAD carries no tag vX.Y.Z: tag it, give --version vX.Y.Z, or build --snapshot"
  fi
fi
[[ "$tag" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
  die "version $tag is not vMAJOR.MINOR.PATCH[-PRERELEASE] (docs/versioning.md)"
version="${tag#v}"
[[ -z "$dirty" ]] || revision="$revision-dirty"
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}"
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"

# cyclonedx-gomod, built once from its Go module (no prebuilt download).
CDX="$CACHE/cyclonedx-gomod-$CDX_VERSION/cyclonedx-gomod"
if [[ ! -x "$CDX" ]]; then
  mkdir -p "$CACHE"
  exec 9>"$CACHE/cyclonedx-gomod.lock"
  flock 9
  if [[ ! -x "$CDX" ]]; then
    say "building cyclonedx-gomod $CDX_VERSION from its Go module into $(dirname "$CDX") (once)"
    tmp="$(mktemp -d "$CACHE/cyclonedx-build.XXXXXX")"
    (cd "$tmp" && GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-buildvcs=false \
      go install -trimpath "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CDX_VERSION")
    mkdir -p "$(dirname "$CDX")"
    mv "$tmp/cyclonedx-gomod" "$CDX"
    rm -rf "$tmp"
  fi
  flock -u 9
fi

# cyclonedx-gomod's app mode reads the module version with go-git, which
# cannot follow a linked worktree's .git file: there the SBOM is made from
# the binary's build information instead (same modules, no licenses).
sbom_mode=app
[[ "$(git rev-parse --git-dir)" == "$(git rev-parse --git-common-dir)" ]] || sbom_mode=bin
[[ -d "$REPO_DIR/.git" || "$sbom_mode" == bin ]] || sbom_mode=bin

start=$SECONDS
rm -rf "$OUT"
mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
say "release $tag (revision $revision, created $created) into ${OUT#"$REPO_DIR"/}"

archive() { # DIR NAME: a reproducible tar.gz of DIR's files
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=pax \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$1" -cf - . | gzip -n -9 >"$OUT/$2"
}

for platform in "${PLATFORMS[@]}"; do
  goos="${platform%/*}" goarch="${platform#*/}"
  name="sidestream_${version}_${goos}_${goarch}"
  dir="$work/$name"
  mkdir -p "$dir"
  GOOS="$goos" GOARCH="$goarch" VERSION="$tag" REVISION="$revision" scripts/build.sh "$dir/router" 2>/dev/null
  cp LICENSE NOTICE README.md CHANGELOG.md "$dir/"
  archive "$dir" "$name.tar.gz"
  # A serial number derived from what the SBOM describes, and no time
  # stamp: the same commit gives the same SBOM.
  serial="$(printf '%s' "$revision $name" | sha256sum | cut -c1-32)"
  serial="${serial:0:8}-${serial:8:4}-5${serial:13:3}-a${serial:17:3}-${serial:20:12}"
  if [[ "$sbom_mode" == app ]]; then
    GOOS="$goos" GOARCH="$goarch" CGO_ENABLED=0 "$CDX" app -json -licenses -std -notimestamp -serial "$serial" \
      -main cmd/router -output "$OUT/$name.cdx.json" . 2>"$work/cdx.log" || { cat "$work/cdx.log" >&2; die "SBOM of $name failed"; }
  else
    "$CDX" bin -json -std -notimestamp -serial "$serial" -version "$tag" -output "$OUT/$name.cdx.json" "$dir/router" \
      2>"$work/cdx.log" || { cat "$work/cdx.log" >&2; die "SBOM of $name failed"; }
  fi
  say "$name: router $(stat -c %s "$dir/router") bytes, archive $(stat -c %s "$OUT/$name.tar.gz") bytes"
done
[[ "$sbom_mode" == app ]] || say "a linked git worktree: SBOMs made from the binaries (cyclonedx-gomod bin), without licenses"

image="$OUT/sidestream_${version}_image.oci.tar"
(cd tools/release && go run . image --out "$image" --version "$version" --revision "$revision" --created "$created" \
  --binary "linux/amd64=$work/sidestream_${version}_linux_amd64/router" \
  --binary "linux/arm64=$work/sidestream_${version}_linux_arm64/router") >"$work/image.json"
while read -r line; do say "image: $line"; done <"$work/image.json"
# The image's config (user, entrypoint, labels, one static binary per
# platform), read back from the tarball.
(cd tools/release && go vet ./... && SIDESTREAM_RELEASE_IMAGE="$image" SIDESTREAM_RELEASE_VERSION="$version" \
  SIDESTREAM_RELEASE_REVISION="$revision" go test -count=1 -v ./...) >"$work/image-test.log" 2>&1 ||
  { cat "$work/image-test.log" >&2; die "the image's tests failed"; }
grep -q -- '--- PASS: TestReleaseImage' "$work/image-test.log" ||
  { cat "$work/image-test.log" >&2; die "TestReleaseImage did not run on $image"; }
say "image: read back and checked (tools/release TestReleaseImage)"

# The chart: appVersion (and so the default image tag) from the version; a
# snapshot's chart version says it is one.
chart_version="$(sed -n 's/^version: *//p' deploy/helm/sidestream/Chart.yaml)"
[[ -z "$snapshot" ]] || chart_version="$chart_version-snapshot.${version#0.0.0-snapshot.}"
scripts/helm.sh package deploy/helm/sidestream --app-version "$version" --version "$chart_version" \
  --destination "$OUT" >/dev/null
# helm package stamps the time of the run into the archive: not reproducible.
chart="$OUT/sidestream-$chart_version.tgz"
[[ -f "$chart" ]] || die "helm package wrote no $chart"
# The packaged chart runs this release's image.
scripts/helm.sh template sidestream "$chart" >"$work/chart.yaml"
grep -q "image: \"sidestream/router:$version\"" "$work/chart.yaml" ||
  die "the packaged chart does not render the image sidestream/router:$version"

(cd "$OUT" && sha256sum -- *.tar.gz *.cdx.json *.oci.tar *.tgz >SHA256SUMS)
say "done in $((SECONDS - start))s:"
(cd "$OUT" && ls -l) >&2
