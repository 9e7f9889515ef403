#!/usr/bin/env bash
# Builds the real servers the tests and the dev stack run: the Temporal CLI (dev server), etcd,
# kube-apiserver and kube-controller-manager, a node's kubelet, kube-proxy and kube-scheduler
# (target node, for the deploy suite), helm for the chart checks, and the production
# Temporal server with its SQL schema tool (target temporal-server) for the suite that runs on it
# and for INTEROP_TEMPORAL=server, and cert-manager's control loops (target cert-manager) for the
# certificates example. Everything comes from the Go module proxy.
# Binaries are cached outside the repo, keyed by version, and reused:
#   ${INTEROP_CACHE_DIR:-$HOME/.cache/interoperator}/bin/<name>-<version>/<name>
# An existing binary named by TEMPORAL_CLI, ETCD_BIN, KUBE_APISERVER_BIN or
# KUBE_CONTROLLER_MANAGER_BIN is used as it is and not built; so is a directory named by
# TEMPORAL_SERVER_DIR that holds temporal-server and temporal-sql-tool.
# An existing directory named by KUBE_NODE_DIR that holds kubelet, kube-proxy and kube-scheduler is
# used as it is too, and so is a binary named by CERT_MANAGER_CONTROLLER_BIN.
# Usage: tools/build-binaries.sh [temporal|etcd|kube|node|helm|temporal-server|cert-manager ...]   (default: all, in parallel)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${INTEROP_CACHE_DIR:-$HOME/.cache/interoperator}"
export GOFLAGS="${GOFLAGS:-} -trimpath" CGO_ENABLED=0
mkdir -p "$cache/bin" "$cache/logs"

TEMPORAL_VERSION=1.5.1
KUBE_VERSION=$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$here/kube/go.mod")
TEMPORAL_SERVER_VERSION=$(awk '/^require go.temporal.io\/server/ {print $3}' "$here/temporal-server/go.mod")
CERT_MANAGER_VERSION=$(awk '$1 == "github.com/cert-manager/cert-manager" {print $2}' "$here/cert-manager/go.mod")
ETCD_VERSION=$(awk '/^require go.etcd.io\/etcd\/server\/v3/ {print $3}' "$here/etcd/go.mod")

log() { printf '[build-binaries] %s\n' "$*" >&2; }

build_temporal() {
  local out="$cache/bin/temporal-$TEMPORAL_VERSION"
  if [ -n "${TEMPORAL_CLI:-}" ] || [ -x "$out/temporal" ]; then return 0; fi
  log "building temporal CLI v$TEMPORAL_VERSION (first run only; several minutes)"
  mkdir -p "$out.tmp"
  (cd "$cache" && GOBIN="$out.tmp" go install -ldflags="-s -w -X github.com/temporalio/cli/temporalcli.Version=$TEMPORAL_VERSION" \
      "github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_VERSION") >"$cache/logs/temporal.log" 2>&1 \
    || { log "temporal build failed; see $cache/logs/temporal.log"; tail -20 "$cache/logs/temporal.log" >&2; return 1; }
  rm -rf "$out" && mv "$out.tmp" "$out"
}

build_etcd() {
  local out="$cache/bin/etcd-$ETCD_VERSION"
  if [ -n "${ETCD_BIN:-}" ] || [ -x "$out/etcd" ]; then return 0; fi
  log "building etcd $ETCD_VERSION (first run only)"
  mkdir -p "$out.tmp"
  (cd "$here/etcd" && go build -ldflags="-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3) >"$cache/logs/etcd.log" 2>&1 \
    || { log "etcd build failed; see $cache/logs/etcd.log"; tail -20 "$cache/logs/etcd.log" >&2; return 1; }
  rm -rf "$out" && mv "$out.tmp" "$out"
}

build_kube() {
  local out="$cache/bin/kube-$KUBE_VERSION"
  if { [ -n "${KUBE_APISERVER_BIN:-}" ] && [ -n "${KUBE_CONTROLLER_MANAGER_BIN:-}" ]; } || [ -x "$out/kube-controller-manager" ]; then return 0; fi
  log "building kube-apiserver and kube-controller-manager $KUBE_VERSION (first run only; the longest step)"
  local minor; minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  mkdir -p "$out.tmp"
  (cd "$here/kube" && go build -ldflags="$ld" -o "$out.tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager) \
      >"$cache/logs/kube.log" 2>&1 \
    || { log "kube build failed; see $cache/logs/kube.log"; tail -20 "$cache/logs/kube.log" >&2; return 1; }
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# A node's programs, from the same module and version as the control plane's, cached apart from
# them so that adding these leaves the control plane's build as it is.
build_node() {
  local out="$cache/bin/kube-node-$KUBE_VERSION"
  if [ -n "${KUBE_NODE_DIR:-}" ] || [ -x "$out/kube-scheduler" ]; then return 0; fi
  log "building kubelet, kube-proxy and kube-scheduler $KUBE_VERSION (first run only)"
  local minor; minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  mkdir -p "$out.tmp"
  (cd "$here/kube" && go build -ldflags="$ld" -o "$out.tmp/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kube-scheduler) \
      >"$cache/logs/kube-node.log" 2>&1 \
    || { log "node build failed; see $cache/logs/kube-node.log"; tail -20 "$cache/logs/kube-node.log" >&2; return 1; }
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# The production Temporal server (frontend, history, matching and worker services in one process)
# and temporal-sql-tool, which sets up its PostgreSQL schemas. The server's go.mod asks for a newer
# Go than the machine's, so this build runs on the Go toolchain named by GOTOOLCHAIN, which the go
# command takes from the module proxy on first use.
build_temporal-server() {
  local out="$cache/bin/temporal-server-$TEMPORAL_SERVER_VERSION"
  if [ -n "${TEMPORAL_SERVER_DIR:-}" ] || [ -x "$out/temporal-sql-tool" ]; then return 0; fi
  log "building temporal-server and temporal-sql-tool $TEMPORAL_SERVER_VERSION (first run only)"
  mkdir -p "$out.tmp"
  (cd "$here/temporal-server" && export GOTOOLCHAIN="${INTEROP_TEMPORAL_SERVER_GOTOOLCHAIN:-go1.27.3}" \
    && go build -ldflags="-s -w" -o "$out.tmp/temporal-server" go.temporal.io/server/cmd/server \
    && go build -ldflags="-s -w" -o "$out.tmp/temporal-sql-tool" go.temporal.io/server/cmd/tools/sql) \
      >"$cache/logs/temporal-server.log" 2>&1 \
    || { log "temporal-server build failed; see $cache/logs/temporal-server.log"; tail -20 "$cache/logs/temporal-server.log" >&2; return 1; }
  rm -rf "$out" && mv "$out.tmp" "$out"
}

HELM_VERSION=v3.22.0

# Helm, for the chart's lint and render checks (its go.mod has no replace directives).
build_helm() {
  local out="$cache/bin/helm-$HELM_VERSION"
  if [ -n "${INTEROP_HELM:-}" ] || [ -x "$out/helm" ]; then return 0; fi
  log "building helm $HELM_VERSION (first run only)"
  mkdir -p "$out.tmp"
  (cd "$cache" && GOBIN="$out.tmp" go install -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
      "helm.sh/helm/v3/cmd/helm@$HELM_VERSION") >"$cache/logs/helm.log" 2>&1 \
    || { log "helm build failed; see $cache/logs/helm.log"; tail -20 "$cache/logs/helm.log" >&2; return 1; }
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# cert-manager's Issuer, Certificate and CertificateRequest control loops, built from its module
# by the small command in tools/cert-manager (its own command is a module the proxy does not serve).
# The folder is keyed by cert-manager's version and by the command's source, which is ours.
build_cert-manager() {
  local out; out="$cache/bin/cert-manager-$CERT_MANAGER_VERSION-$(sha256sum "$here/cert-manager/main.go" | cut -c1-8)"
  if [ -n "${CERT_MANAGER_CONTROLLER_BIN:-}" ] || [ -x "$out/cert-manager-controller" ]; then return 0; fi
  log "building cert-manager's controller $CERT_MANAGER_VERSION (first run only)"
  mkdir -p "$out.tmp"
  (cd "$here/cert-manager" && go build -ldflags="-s -w" -o "$out.tmp/cert-manager-controller" .) \
      >"$cache/logs/cert-manager.log" 2>&1 \
    || { log "cert-manager build failed; see $cache/logs/cert-manager.log"; tail -20 "$cache/logs/cert-manager.log" >&2; return 1; }
  rm -rf "$out" && mv "$out.tmp" "$out"
}

targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(temporal etcd kube node helm temporal-server cert-manager)
pids=()
for t in "${targets[@]}"; do "build_$t" & pids+=($!); done
rc=0; for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
