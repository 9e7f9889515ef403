#!/usr/bin/env bash
# Makes sure what runs docker-compose.yml is at hand:
# - a compose client: test/unit/charts/deploy-files.test.ts runs its `config -q` (no engine
#   needed), and test/deploy/compose.test.ts its `up` and `down`. Debian's docker-compose package
#   (1.29) copes with the file: the `depends_on` conditions service_completed_successfully, the
#   anchors and merge keys.
# - Debian's Docker engine, the docker.io package (dockerd, and the docker client beside it), which
#   test/deploy/compose.test.ts starts with settings of its own (dev/local/docker-engine.ts).
# Installs the missing packages, without what they recommend, when this machine can (root,
# apt-get); does nothing when both are there. The package's own service is not meant to run: if
# installing it started one, it is stopped again (its default settings rewrite the iptables FORWARD
# policy, which the deploy suite's node relies on). Without them, the tests that need them are
# skipped locally; under CI=true this script fails instead.
set -euo pipefail

missing=()
if ! docker compose version >/dev/null 2>&1 && ! docker-compose version >/dev/null 2>&1; then
  missing+=(docker-compose)
fi
[ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ] || missing+=(docker.io)
[ ${#missing[@]} -gt 0 ] || exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's ${missing[*]} to run docker-compose.yml in the tests" >&2
  service_before=false
  [ -s /var/run/docker.pid ] && service_before=true
  # Others may be installing packages on this machine at the same time: wait for dpkg's lock.
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  if ! $service_before && [ -s /var/run/docker.pid ] && [ -x /etc/init.d/docker ]; then
    echo "stopping the docker service the package started (the tests start their own engine)" >&2
    /etc/init.d/docker stop >/dev/null || true
  fi
  exit 0
fi

if [ "${CI:-}" = true ]; then
  echo "missing: Debian's ${missing[*]}, and apt-get as root is not at hand: install them to run docker-compose.yml in the tests" >&2
  exit 1
fi
echo "missing: Debian's ${missing[*]} (install them): the tests that run docker-compose.yml will be skipped" >&2
