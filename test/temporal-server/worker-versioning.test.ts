/**
 * The upgrade through Worker Versioning (test/integration/worker-versioning.test.ts) on the
 * production Temporal server, whose deployment versions and drainage are read from its SQL
 * visibility rather than the dev server's.
 */
import '../integration/worker-versioning.test.js';
