# The two commands of the README. Both install the npm dependencies when the lock file changed and
# build the real servers (Temporal CLI, etcd, kube-apiserver, kube-controller-manager; for the tests
# and INTEROP_TEMPORAL=server, the production Temporal server too; for the tests, cert-manager's
# control loops) from the Go module proxy on first use, cached outside the repo.
.PHONY: run test

# npm ci, tried three times: the registry sometimes drops a connection (EIDLETIMEOUT) mid-install.
node_modules/.installed: package-lock.json
	@for attempt in 1 2 3; do \
	  npm ci --no-audit --no-fund && exit 0; \
	  echo "npm ci failed (attempt $$attempt of 3)" >&2; sleep 10; \
	done; exit 1
	@touch $@

## Runs the whole system locally: control plane, Temporal (UI on :8233), example catalog and operator, worker, broker.
run: node_modules/.installed
	npm run build:binaries -- temporal etcd kube helm $(if $(filter server,$(INTEROP_TEMPORAL)),temporal-server)
	$(if $(filter server,$(INTEROP_TEMPORAL)),bash tools/ensure-postgresql.sh)
	npm run dev

## Runs every test: lint, format, typecheck, build, unit and integration tests against real servers
## (and Chromium, installed when absent, for the Temporal Web UI's browser test; PostgreSQL, installed
## when absent, for the production Temporal server's suite; a compose client and Debian's Docker
## engine, installed when absent, to check and run docker-compose.yml). Under CI=true a test whose
## tool is missing fails.
test: node_modules/.installed
	npm run build:binaries
	bash tools/ensure-chromium.sh
	bash tools/ensure-postgresql.sh
	bash tools/ensure-compose.sh
	bash tools/ensure-node-packages.sh
	npm test
