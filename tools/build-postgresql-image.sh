#!/usr/bin/env bash
# Builds the image of the postgresql-server example (examples/postgresql-server): Debian's
# PostgreSQL 15 server and client in a minimal Debian root file system (mmdebstrap, variant minbase,
# from this machine's Debian sources), with the example's entrypoint and its bind, unbind, backup and restore
# commands (examples/postgresql-server/image) in /usr/local/bin. No container registry is involved.
#
# Cached under ${INTEROP_CACHE_DIR:-$HOME/.cache/interoperator}/images:
#   postgresql-<key>.docker.tar   the image as a docker archive (`ctr images import`, `docker load`)
# <key> is a hash of the image's files, this script, the Debian sources and the tag: a second run
# with nothing changed builds nothing. A new build removes the earlier archives.
#
# Usage: tools/build-postgresql-image.sh [--tag NAME:TAG]   (default localhost/interop/postgresql:15)
# The last line printed (stdout) is the archive's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${INTEROP_CACHE_DIR:-$HOME/.cache/interoperator}/images"
tag=localhost/interop/postgresql:15
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="${2:?--tag needs NAME:TAG}"; shift 2 ;;
    --tag=*) tag="${1#--tag=}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-postgresql-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
log() { printf '[build-postgresql-image] %s\n' "$*" >&2; }
for tool in mmdebstrap buildah sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || { log "$tool is missing: install Debian's package $tool"; exit 1; }
done

files="$root/examples/postgresql-server/image"
debian_release="$(. /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}")"
apt_sources=()
[ -s /etc/apt/sources.list ] && grep -q '^[[:space:]]*deb' /etc/apt/sources.list && apt_sources+=(/etc/apt/sources.list)
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && apt_sources+=("$f")
done
[ ${#apt_sources[@]} -gt 0 ] || { log "no Debian sources in /etc/apt/sources.list(.d)"; exit 1; }

key="$( {
  sha256sum "$0" "$files"/* "${apt_sources[@]}"
  echo "$debian_release $tag"
} | sha256sum | cut -c1-16)"
archive="$cache/postgresql-$key.docker.tar"
if [ -s "$archive" ]; then
  log "up to date: $tag"
  echo "$archive"
  exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d "$cache/postgresql-$key.XXXXXX")"
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
log "making the root file system with Debian's postgresql-15 (mmdebstrap)"
# The package makes a cluster `main` and would start it: the image holds no cluster (the entrypoint
# makes one in the volume), and nothing is started while building.
mmdebstrap --variant=minbase --format=tar --include=postgresql-15,postgresql-client-15 \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --essential-hook='mkdir -p "$1/etc/postgresql-common/createcluster.d" && echo "create_main_cluster = false" >"$1/etc/postgresql-common/createcluster.d/no-main-cluster.conf"' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  --customize-hook='install -m 0755 '"$files"'/entrypoint.sh "$1/usr/local/bin/postgresql-server"' \
  --customize-hook='install -m 0755 '"$files"'/pg-grant '"$files"'/pg-revoke '"$files"'/pg-backup '"$files"'/pg-restore "$1/usr/local/bin/"' \
  "$debian_release" "$work/rootfs.tar" "${apt_sources[@]}" >"$work/mmdebstrap.log" 2>&1 \
  || { log "mmdebstrap failed:"; tail -20 "$work/mmdebstrap.log" >&2; exit 1; }

storage="$cache/storage"
runroot="/tmp/interoperator-images-run-$(id -u)"
bah() { buildah --root "$storage" --runroot "$runroot" --storage-driver overlay "$@"; }
ctr="$(bah from --quiet scratch)"
bah add --quiet "$ctr" "$work/rootfs.tar" / >/dev/null
bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/lib/postgresql/15/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env PGDATA=/var/lib/postgresql/data/pgdata --port 5432/tcp \
  --entrypoint '["/usr/local/bin/postgresql-server"]' --cmd '' "$ctr"
bah commit --quiet --rm "$ctr" "$tag" >/dev/null
bah push --quiet "$tag" "docker-archive:$work/image.tar:$tag" >/dev/null
bah rmi --quiet "$tag" >/dev/null 2>&1 || true
mv "$work/image.tar" "$archive"
for old in "$cache"/postgresql-*.docker.tar; do
  [ "$old" = "$archive" ] || rm -f "$old"
done
log "built in $(($(date +%s) - started)) s ($(du -m "$archive" | cut -f1) MB)"
echo "$archive"
