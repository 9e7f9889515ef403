/** Access to the real servers of the integration run (started by test/integration/global-setup.mjs). */
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { fileURLToPath } from 'node:url';
import type { EnvironmentInfo } from '../../dev/local/environment.js';
import { operationSinks } from '../../src/activities/metrics.js';
import type { OperationRecorder } from '../../src/metrics/recorders.js';
import { clusterClientFromFile, type ClusterClient } from '../../src/kube/clients.js';
import { isNotFound } from '../../src/kube/errors.js';
import { parsePayloadKeys } from '../../src/temporal/codec.js';
import { payloadCodec } from '../../src/temporal/connection.js';

/**
 * The workflow bundle `npm run build` writes (src/roots/workflow-bundle.ts), as the workers load it,
 * with the sinks its interceptor calls (operation endings, dropped unless `recorder` takes them).
 */
export function builtWorkflows(recorder?: OperationRecorder) {
  const codePath = fileURLToPath(new URL('../../dist/bundles/workflows.js', import.meta.url));
  if (!existsSync(codePath)) throw new Error(`${codePath} is missing: run \`npm run build\` first`);
  const dropped: OperationRecorder = {
    operationFinished: () => undefined,
    stepRetried: () => undefined,
    templateRendered: () => undefined,
  };
  return { workflowBundle: { codePath }, sinks: operationSinks(recorder ?? dropped) };
}

export function environment(): EnvironmentInfo {
  const file = process.env.INTEROP_TEST_ENV;
  if (!file)
    throw new Error('INTEROP_TEST_ENV is not set: run integration tests through jest (global-setup)');
  return JSON.parse(readFileSync(file, 'utf8')) as EnvironmentInfo;
}

/** API clients of every cluster, master first. */
export function clusters(): ClusterClient[] {
  return environment().clusters.map((c) => clusterClientFromFile(c.id, c.kubeconfigPath));
}

/**
 * A client of the run's Temporal server; given a system's payload keys (SystemSettings), it decodes
 * what that system encrypted (memos, results) as its own client does.
 */
export async function temporalClient(
  payloadKeys?: string,
): Promise<{ client: Client; close(): Promise<void> }> {
  const { temporal } = environment();
  const connection = await Connection.connect({ address: temporal.address });
  return {
    client: new Client({
      connection,
      namespace: temporal.namespace,
      ...(payloadKeys
        ? { dataConverter: { payloadCodecs: [payloadCodec({ payloadKeys: parsePayloadKeys(payloadKeys) })] } }
        : {}),
    }),
    close: () => connection.close(),
  };
}

/** A short random suffix for names unique to one test. */
export const unique = (prefix: string): string => `${prefix}-${randomBytes(4).toString('hex')}`;

/** Polls `fn` until it returns a value other than undefined, or fails with `what` after the timeout. */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await fn();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/**
 * Waits until `read` fails with NotFound: the object is gone (deleted, collected, or its deletion
 * finished). Other failures are retried until the time is up.
 */
export function untilGone(what: string, read: () => Promise<unknown>, timeoutMs = 30_000): Promise<true> {
  return eventually(
    what,
    async () => {
      try {
        await read();
        return undefined;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    },
    timeoutMs,
  );
}

/** Waits until the namespace's deletion has finished on `cluster`. */
export function untilNamespaceGone(
  cluster: ClusterClient,
  namespace: string,
  timeoutMs = 30_000,
): Promise<true> {
  return untilGone(
    `namespace ${namespace} to go`,
    () => cluster.core.readNamespace({ name: namespace }),
    timeoutMs,
  );
}
