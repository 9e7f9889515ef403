#!/usr/bin/env bash
# Makes sure a headless Chromium is at hand for the browser test of the Temporal Web UI
# (test/integration/temporal-ui.test.ts): installs Debian's package when none is found and this
# machine can install it (root, apt-get). Does nothing when one is there. Without one, the test
# is skipped locally and fails under CI=true.
set -euo pipefail

for browser in chromium chromium-browser google-chrome; do
  if command -v "$browser" >/dev/null 2>&1; then exit 0; fi
done

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Chromium (Debian's package) for the browser test" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi

if [ "${CI:-}" = true ]; then
  echo "no Chromium, and apt-get as root is not at hand: install chromium for the browser test" >&2
  exit 1
fi
echo "no Chromium (install Debian's chromium package): the Temporal Web UI browser test will be skipped" >&2
