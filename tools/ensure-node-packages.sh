#!/usr/bin/env bash
# Makes sure the programs of the deploy suite's node (dev/local/kube-node.ts) are at hand:
# containerd and runc (the container runtime), the CNI plugins (/usr/lib/cni), iptables and
# conntrack (for kube-proxy), umoci, skopeo and a static busybox (for the images the harness makes).
# Installs Debian's packages that are missing when this machine can install them (root, apt-get);
# otherwise fails naming them. The suite also needs root itself: under CI=true it fails without.
set -euo pipefail

# package:program that shows it is installed
wanted=(
  containerd:/usr/bin/containerd
  runc:/usr/sbin/runc
  containernetworking-plugins:/usr/lib/cni/bridge
  iptables:/usr/sbin/iptables
  conntrack:/usr/sbin/conntrack
  umoci:/usr/bin/umoci
  skopeo:/usr/bin/skopeo
  busybox-static:/bin/busybox
)
missing=()
for entry in "${wanted[@]}"; do
  package="${entry%%:*}" program="${entry#*:}"
  if [ "$package" = busybox-static ]; then
    # Only the static build can be copied into an image.
    dpkg -s busybox-static >/dev/null 2>&1 || missing+=("$package")
  elif [ ! -x "$program" ]; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -gt 0 ] || exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's ${missing[*]} for the deploy suite's node" >&2
  # Others may be installing packages on this machine at the same time: wait for dpkg's lock.
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  exit 0
fi

echo "missing for the deploy suite's node, and apt-get as root is not at hand: install Debian's ${missing[*]}" >&2
exit 1
