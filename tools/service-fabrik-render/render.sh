#!/usr/bin/env bash
# Renders Service Fabrik's sample plans (test/fixtures/service-fabrik/templates/*/) with Service
# Fabrik's own inter-operator code and writes each sample's expected/ (see main.go).
#
# Usage: tools/service-fabrik-render/render.sh <service-fabrik-broker git dir> [commit]
#
# It copies the interoperator module of that commit (git archive) into a temporary folder, adds
# main.go as cmd/service-fabrik-render and sf/export_samples.go to internal/resources (it only
# exposes what that package's unexported functions render), builds it with the module's own
# go.mod and go.sum (dependencies from the Go module proxy), and runs it over the samples. The
# test that reads the outputs needs neither Go nor that repository.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
repo="${1:?usage: render.sh <service-fabrik-broker git dir> [commit]}"
commit="${2:-HEAD}"
case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) export PATH="$PATH:/usr/local/go/bin" ;; esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git -C "$repo" archive "$commit" interoperator | tar -x -C "$work"
mkdir -p "$work/interoperator/cmd/service-fabrik-render"
cp "$here/main.go" "$work/interoperator/cmd/service-fabrik-render/main.go"
cp "$here/sf/export_samples.go" "$work/interoperator/internal/resources/export_samples.go"
(cd "$work/interoperator" && go build -o "$work/service-fabrik-render" ./cmd/service-fabrik-render)
echo "service-fabrik-render: interoperator of $(git -C "$repo" rev-parse "$commit")"
"$work/service-fabrik-render" "$root"/test/fixtures/service-fabrik/templates/*/
