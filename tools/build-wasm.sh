#!/usr/bin/env bash
# Builds the template renderers as WebAssembly into dist/wasm, with Go's wasm_exec.js beside them:
# - gotemplate.wasm: Go's text/template + sprig (src/templates/gotemplate/go);
# - helm.wasm: Helm's own chart loader, values and template engine (src/templates/helm/go).
#
# Quick when nothing changed: each is skipped (without needing Go) while it is newer than every Go
# source of its module; otherwise Go's own module and build caches (~/go/pkg/mod, ~/.cache/go-build)
# make a rebuild take seconds (about a minute for helm.wasm from a cold build cache).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/dist/wasm"
# The Helm version helm.wasm reports as .Capabilities.HelmVersion: its go.mod's, as the helm binary
# of tools/build-binaries.sh reports its own.
HELM_VERSION=v3.22.0

# up_to_date <module dir> <wasm>: the wasm and wasm_exec.js exist and no Go source is newer.
up_to_date() {
  [ -f "$2" ] && [ -f "$out/wasm_exec.js" ] &&
    [ -z "$(find "$1" -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$2" -print -quit)" ]
}

gotemplate_src="$root/src/templates/gotemplate/go"
helm_src="$root/src/templates/helm/go"
if up_to_date "$gotemplate_src" "$out/gotemplate.wasm" && up_to_date "$helm_src" "$out/helm.wasm"; then
  exit 0
fi

case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) export PATH="$PATH:/usr/local/go/bin" ;; esac
command -v go >/dev/null || {
  echo "build-wasm: the Go toolchain (go) is needed to build the renderers in $out" >&2
  exit 1
}

mkdir -p "$out"
goroot="$(go env GOROOT)"
exec_js="$goroot/lib/wasm/wasm_exec.js" # Go 1.24 and later
[ -f "$exec_js" ] || exec_js="$goroot/misc/wasm/wasm_exec.js"
cp "$exec_js" "$out/wasm_exec.js.tmp"
mv "$out/wasm_exec.js.tmp" "$out/wasm_exec.js"

# build <module dir> <wasm> [extra -ldflags]
build() {
  if up_to_date "$1" "$2"; then return 0; fi
  (cd "$1" && GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w ${3:-}" -o "$2.tmp" .)
  mv "$2.tmp" "$2"
  echo "build-wasm: built $2"
}
build "$gotemplate_src" "$out/gotemplate.wasm"
build "$helm_src" "$out/helm.wasm" "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
# dist/wasm holds the WebAssembly build only: the native renderer (bench/render-native.ts) is built
# into the cache, never here.
rm -f "$out/render-native"
