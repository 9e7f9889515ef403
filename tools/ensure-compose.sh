#!/usr/bin/env bash
# Makes sure a compose client is at hand for the check of docker-compose.yml
# (test/unit/charts/deploy-files.test.ts runs `config -q`, which reads and validates the file and
# needs no container engine): installs Debian's docker-compose package, without the engine it
# recommends, when no client is found and this machine can install it (root, apt-get). Does
# nothing when one is there. Without one, the check is skipped locally and fails under CI=true.
set -euo pipefail

if docker compose version >/dev/null 2>&1 || docker-compose version >/dev/null 2>&1; then exit 0; fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing docker-compose (Debian's package) for the check of docker-compose.yml" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  exit 0
fi

if [ "${CI:-}" = true ]; then
  echo "no compose client, and apt-get as root is not at hand: install docker-compose for the check of docker-compose.yml" >&2
  exit 1
fi
echo "no compose client (install Debian's docker-compose package): the check of docker-compose.yml will be skipped" >&2
