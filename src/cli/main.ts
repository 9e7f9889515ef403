#!/usr/bin/env node
/**
 * The `interoperator` command line (program.ts): the service owner's `template render`, and the
 * operator's commands over the admin API, the workers' versions over Temporal, and the derivation
 * of a cluster's payload keys. `interoperator --help` lists them.
 */
import {
  loadAdminClientConfig,
  loadPayloadKeysSetting,
  loadRendererConfig,
  loadWorkerDeploymentTarget,
} from '../config.js';
import { connectWorkerVersions } from '../temporal/worker-versions.js';
import { runCli } from './program.js';

const payloadKeys = loadPayloadKeysSetting();
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  adminConfig: loadAdminClientConfig(),
  rendererConfig: loadRendererConfig(),
  workerVersions: () => connectWorkerVersions(loadWorkerDeploymentTarget()),
  ...(payloadKeys ? { payloadKeys } : {}),
});
