/**
 * Starts the real servers of the production-Temporal suite: the Temporal server on PostgreSQL
 * (dev/local/temporal-server.ts) and the same Kubernetes clusters as the integration run. Its
 * tests read where they are from INTEROP_TEST_ENV_TEMPORAL_SERVER (setup-env.ts makes it theirs),
 * so the suite runs beside the dev server's in one jest run.
 */
import { startEnvironment } from '../integration/global-setup.mjs';

export default async function globalSetup() {
  await startEnvironment({
    temporalKind: 'server',
    key: '__interopTemporalServerEnvironment',
    envVar: 'INTEROP_TEST_ENV_TEMPORAL_SERVER',
  });
}
