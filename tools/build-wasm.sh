#!/usr/bin/env bash
# Builds the gotemplate renderer (Go's text/template + sprig, src/templates/gotemplate/go) as
# WebAssembly into dist/wasm/gotemplate.wasm, with Go's wasm_exec.js beside it.
#
# Quick when nothing changed: skipped (without needing Go) while the output is newer than every Go
# source; otherwise Go's own module and build caches (~/go/pkg/mod, ~/.cache/go-build) make a
# rebuild take seconds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/src/templates/gotemplate/go"
out="$root/dist/wasm"
wasm="$out/gotemplate.wasm"

if [ -f "$wasm" ] && [ -f "$out/wasm_exec.js" ] &&
  [ -z "$(find "$src" -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$wasm" -print -quit)" ]; then
  exit 0
fi

case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) export PATH="$PATH:/usr/local/go/bin" ;; esac
command -v go >/dev/null || {
  echo "build-wasm: the Go toolchain (go) is needed to build $wasm" >&2
  exit 1
}

mkdir -p "$out"
goroot="$(go env GOROOT)"
exec_js="$goroot/lib/wasm/wasm_exec.js" # Go 1.24 and later
[ -f "$exec_js" ] || exec_js="$goroot/misc/wasm/wasm_exec.js"
(cd "$src" && GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o "$wasm.tmp" .)
cp "$exec_js" "$out/wasm_exec.js.tmp"
mv "$out/wasm_exec.js.tmp" "$out/wasm_exec.js"
mv "$wasm.tmp" "$wasm"
# dist/wasm holds the WebAssembly build only: the native renderer (bench/render-native.ts) is built
# into the cache, never here.
rm -f "$out/render-native"
echo "build-wasm: built $wasm"
