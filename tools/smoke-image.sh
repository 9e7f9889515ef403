#!/usr/bin/env bash
# Runs the image of an OCI archive (tools/build-image.sh writes one) in real containers (podman with
# runc, no network) and checks what a cluster relies on:
# - its user is uid 1000 (runAsNonRoot can check it), and the image says so by number;
# - `node --no-memory-reducer dist/src/main.js selfcheck` exits 0: both workflow bundles compile and
#   the WebAssembly renderers render a gotemplate and a helm template (src/roots/selfcheck.ts);
# - node_modules holds no development dependency (jest, typescript, eslint, prettier, ...).
# Prints one `ok:` line per check; exits non-zero on the first that fails, saying why.
# The image is loaded into podman storage of its own under
# ${INTEROP_CACHE_DIR:-$HOME/.cache/interoperator}/images/smoke (its containers are removed).
# Usage: tools/smoke-image.sh <archive.oci.tar>
# Installs Debian's podman and runc when missing (root and apt-get); fails naming the package
# otherwise.
set -euo pipefail
archive="${1:?usage: tools/smoke-image.sh <archive.oci.tar>}"
[ -s "$archive" ] || { echo "smoke-image: no archive at $archive" >&2; exit 2; }
cache="${INTEROP_CACHE_DIR:-$HOME/.cache/interoperator}/images"

need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "smoke-image: installing Debian's $2 (for $1)" >&2
    { apt-get -o DPkg::Lock::Timeout=600 update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$2" >/dev/null; } ||
      { echo "smoke-image: could not install Debian's package $2: install it by hand" >&2; exit 1; }
    command -v "$1" >/dev/null 2>&1 && return 0
  fi
  echo "smoke-image: $1 is missing: install Debian's package $2 (as root: apt-get install $2)" >&2
  exit 1
}
need podman podman
need runc runc

mkdir -p "$cache/smoke"
pod() {
  podman --root "$cache/smoke/storage" --runroot "/tmp/interoperator-smoke-run-$(id -u)" --storage-driver overlay \
    --cgroup-manager cgroupfs --events-backend file --runtime runc "$@"
}
fail() { echo "smoke-image: $*" >&2; exit 1; }

image="$(pod load --input "$archive" 2>&1 | sed -n 's/^Loaded image[^:]*: //p' | cut -d, -f1)"
[ -n "$image" ] || fail "podman loaded no image from $archive"
# Limits runc may set without CAP_SYS_RESOURCE (podman's defaults are above this machine's hard
# limits, which a container may not raise), and no network: the checks need none.
run() {
  pod run --rm --network none --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096 "$@"
}

user="$(pod image inspect --format '{{.Config.User}}' "$image")"
[ "$user" = 1000:1000 ] || fail "the image's user is '$user', not 1000:1000"
uid="$(run --entrypoint id "$image" -u)"
[ "$uid" = 1000 ] || fail "the image runs as uid '$uid', not 1000"
echo "ok: runs as uid 1000 (image user $user)"

out="$(run "$image" --no-memory-reducer dist/src/main.js selfcheck 2>&1)" || fail "selfcheck failed: $out"
printf '%s\n' "$out"

# The development tools of package.json (not @swc/core, which the Temporal worker itself depends on).
dev_tools='jest typescript eslint prettier @eslint/js typescript-eslint @swc/jest @types/jest dependency-cruiser supertest puppeteer-core fast-check'
dev="$(run --entrypoint sh "$image" -c \
  'for d in '"$dev_tools"'; do [ ! -e "node_modules/$d/package.json" ] || echo "$d"; done; ls node_modules | wc -l >&2' 2>"$cache/smoke/count")" ||
  fail "could not list node_modules"
[ -z "$dev" ] || fail "node_modules holds development dependencies: $(echo $dev)"
echo "ok: node_modules holds no development dependency ($(cat "$cache/smoke/count") entries; none of $dev_tools)"
