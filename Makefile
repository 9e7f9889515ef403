# The two commands of the README. Both install the npm dependencies when the lock file changed and
# build the real servers (Temporal CLI, etcd, kube-apiserver, kube-controller-manager) from the Go
# module proxy on first use, cached outside the repo.
.PHONY: run test

node_modules/.installed: package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

## Runs the whole system locally: control plane, Temporal (UI on :8233), example catalog and operator, worker, broker.
run: node_modules/.installed
	npm run build:binaries
	npm run dev

## Runs every test: lint, format, typecheck, build, unit and integration tests against real servers.
test: node_modules/.installed
	npm run build:binaries
	npm test
