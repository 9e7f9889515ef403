#!/usr/bin/env bash
# Builds the gotemplate renderer (Go's text/template + sprig, src/templates/gotemplate/go) twice
# from the same code: as WebAssembly for the broker, and natively for the differential tests and
# the render benchmark. Output in dist/wasm/; skipped when newer than every Go source.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/src/templates/gotemplate/go"
out="$root/dist/wasm"
mkdir -p "$out"
case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) export PATH="$PATH:/usr/local/go/bin" ;; esac

newest=$(find "$src" -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -newer "$out/gotemplate.wasm" 2>/dev/null | head -1 || true)
if [ -f "$out/gotemplate.wasm" ] && [ -f "$out/render-native" ] && [ -z "$newest" ]; then exit 0; fi

goroot="$(go env GOROOT)"
exec_js="$goroot/lib/wasm/wasm_exec.js"
[ -f "$exec_js" ] || exec_js="$goroot/misc/wasm/wasm_exec.js"
cp "$exec_js" "$out/wasm_exec.js"
(cd "$src" && GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o "$out/gotemplate.wasm.tmp" . && mv "$out/gotemplate.wasm.tmp" "$out/gotemplate.wasm")
(cd "$src" && go build -trimpath -o "$out/render-native" ./cmd/render-native)
