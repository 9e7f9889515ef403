#!/usr/bin/env bash
# Makes sure PostgreSQL's server programs are at hand for the production Temporal server's test
# suite (INTEROP_TEMPORAL=server; dev/local/postgresql.ts): installs Debian's package when none is
# found and this machine can install it (root, apt-get). Does nothing when one is there.
# Without one, that suite fails, naming the package to install.
set -euo pipefail

if [ -n "${INTEROP_POSTGRES_BIN_DIR:-}" ] || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then exit 0; fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing PostgreSQL (Debian's package) for the production Temporal server" >&2
  apt-get update -qq
  # Only the programs: the package's own cluster is not used (each run makes its own).
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  exit 0
fi

echo "no PostgreSQL server programs, and apt-get as root is not at hand: install Debian's postgresql package" >&2
exit 1
