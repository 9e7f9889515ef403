# The inter-operator's image. The Helm chart runs `node dist/src/main.js broker` and
# `node dist/src/main.js worker`; docker-compose.yml also runs the example operator
# (`node dist/examples/operator/main.js`) from it. Configuration: INTEROP_* environment variables
# (src/config.ts).
#
# The bases are build arguments, by default the public images; tools/build-image.sh builds this file
# with local equivalents (docs/development.md). NPM_REGISTRY, GOPROXY and GOSUMDB, when given, are
# the registries the build's npm and go use (empty: their own defaults); NODE_EXTRA_CA_CERTS, a CA
# bundle inside the build's containers that npm trusts too. None of them is in the image's environment
# or files (the image's history records them, as it records every build argument a RUN step uses).
ARG GO_IMAGE=golang:1.26
ARG NODE_IMAGE=node:20
ARG NODE_SLIM_IMAGE=node:20-slim

# 1. The template renderers compiled to WebAssembly (dist/wasm): Go's text/template + sprig, and
# Helm's chart engine.
FROM ${GO_IMAGE} AS wasm
ARG GOPROXY
ARG GOSUMDB
WORKDIR /app
COPY tools/build-wasm.sh tools/
COPY src/templates/gotemplate/go src/templates/gotemplate/go
COPY src/templates/helm/go src/templates/helm/go
RUN bash tools/build-wasm.sh

# 2. The TypeScript build, with every dependency.
FROM ${NODE_IMAGE} AS build
ARG NPM_REGISTRY=
ARG NODE_EXTRA_CA_CERTS
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund ${NPM_REGISTRY:+--registry=$NPM_REGISTRY}
COPY tsconfig.json tsconfig.build.json ./
COPY tools tools
COPY src src
COPY examples examples
COPY --from=wasm /app/dist/wasm dist/wasm
# `npm run build` first runs tools/build-wasm.sh, which skips the Go build when the renderer is
# newer than its sources: it is (touched), so this stage needs no Go toolchain.
RUN touch dist/wasm/* && npm run build

# 3. The runtime: production dependencies and the compiled code only.
FROM ${NODE_SLIM_IMAGE} AS runtime
ARG NPM_REGISTRY=
ARG NODE_EXTRA_CA_CERTS
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund ${NPM_REGISTRY:+--registry=$NPM_REGISTRY} && npm cache clean --force
# dist/src holds the renderer's worker thread too (worker.mjs, which the build copies beside the
# compiled pool); the renderer finds it and dist/wasm from its own location.
COPY --from=build /app/dist/src dist/src
# The workflow code, bundled once by the build: workers load it and run no bundler when they start.
COPY --from=build /app/dist/bundles dist/bundles
COPY --from=build /app/dist/examples dist/examples
COPY --from=build /app/dist/wasm/gotemplate.wasm /app/dist/wasm/helm.wasm /app/dist/wasm/wasm_exec.js dist/wasm/
# CRDs and the example catalog, for installing them from the image (docker-compose.yml does).
COPY charts/interoperator/crds charts/interoperator/crds
COPY examples/operator/crds examples/operator/crds
COPY examples/postgresql examples/postgresql
# The `node` user of the base image, by number so that Kubernetes can check runAsNonRoot.
USER 1000:1000
EXPOSE 8080
ENTRYPOINT ["node"]
# The broker's node flags: see BROKER_NODE_FLAGS in src/config.ts.
CMD ["--no-memory-reducer", "--max-semi-space-size=8", "dist/src/main.js", "all"]
