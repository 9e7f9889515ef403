/**
 * Points the tests of the production-Temporal suite at its own servers (global-setup.mjs): the
 * shared test support reads INTEROP_TEST_ENV, which the dev server's run sets for its own.
 */
const file = process.env.INTEROP_TEST_ENV_TEMPORAL_SERVER;
if (!file)
  throw new Error('INTEROP_TEST_ENV_TEMPORAL_SERVER is not set: run this suite through jest (global-setup)');
process.env.INTEROP_TEST_ENV = file;
