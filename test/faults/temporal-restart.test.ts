/**
 * Fault: the Temporal server (the dev server on its SQLite file) is SIGKILLed while operations run,
 * and started again a moment later. While it is gone the broker answers 503 with `Retry-After`,
 * never 500, and `last_operation` answers from the record; once it is back every accepted
 * operation completes, and the audit finds nothing lost, duplicated or left behind.
 */
import { randomUUID } from 'node:crypto';
import { getRecord } from '../../src/kube/custom-objects.js';
import { instanceNamespace, resourceName } from '../../src/resources/names.js';
import { SFSERVICEINSTANCE } from '../../src/resources/types.js';
import { eventually } from '../support/env.js';
import { endsWithSecretsSweep, faultLandscape } from '../support/fault-environment.js';
import {
  faultSizes,
  installFaultPlans,
  LIFECYCLE_OPERATIONS,
  PLAN_ID,
  SERVICE_ID,
} from '../support/fault-run.js';
import { osbClient, provisionBody } from '../support/osb.js';

/** INTEROP_FAULT_OPERATIONS sizes the run (default 20); Temporal restarts once. */
const LIVES = Math.ceil(faultSizes({ operations: 20, kills: 1 }).operations / LIFECYCLE_OPERATIONS);
/** Time for the run: it grows with the size (the assertions are on outcomes, never on time). */
const TIMEOUT_MS = 300_000 + LIVES * 15_000;

describe('fault: the Temporal server restarts while operations run', () => {
  const landscape = faultLandscape('temporal-restart');

  test(
    '503 with Retry-After while it is gone, last_operation from the record; every operation completes after',
    async () => {
      const { env } = landscape;
      const broker = await landscape.start('broker');
      await landscape.start('worker');
      await installFaultPlans(broker.url);
      const platform = landscape.platform(() => broker.url);
      const osb = osbClient(broker.url);

      // GIVEN instances going through their lives, and one whose record is written
      const done = Promise.all(Array.from({ length: LIVES }, (_, i) => platform.lifecycle(i % 2 === 0)));
      const [master] = env.clusters;
      const recorded = await eventually(
        'an instance with its record',
        async () => {
          for (const instance of platform.instances.values()) {
            const record = await getRecord(
              master!,
              SFSERVICEINSTANCE,
              instanceNamespace(instance.id),
              resourceName(instance.id),
            ).catch(() => undefined);
            if (record) return instance.id;
          }
          return undefined;
        },
        60_000,
      );
      await eventually('operations in flight', async () => (platform.inFlight > 0 ? true : undefined));

      // (the refused request's instance: nothing of it may exist at the end)
      const refusedId = randomUUID();
      platform.instances.set(refusedId, { id: refusedId, live: false, bindings: new Map() });

      // WHEN the Temporal server is killed
      await env.killTemporal();
      try {
        // THEN (asked side by side: each waits out the client's retries) a new request gets 503
        // with Retry-After, not 500; last_operation of an instance with a record answers from the
        // record; of an instance without one, 503 again
        const [refused, fromRecord, unknown] = await Promise.all([
          osb(
            'PUT',
            `/v2/service_instances/${refusedId}?accepts_incomplete=true`,
            provisionBody(SERVICE_ID, PLAN_ID),
          ),
          osb('GET', `/v2/service_instances/${recorded}/last_operation`),
          osb('GET', `/v2/service_instances/${randomUUID()}/last_operation`),
        ]);
        expect([refused.status, refused.body.error]).toEqual([503, 'ServiceUnavailable']);
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(fromRecord.status).toBe(200);
        expect(['in progress', 'succeeded']).toContain(fromRecord.body.state);
        expect([unknown.status, unknown.headers.get('retry-after') !== null]).toEqual([503, true]);
      } finally {
        // WHEN it is started again on its file
        await env.startTemporal();
      }
      await done;

      // THEN every accepted operation ended, never with a 500 on the way, and nothing is left behind
      expect(platform.surprises).toEqual([]);
      const verdict = await landscape.audit(platform, 'Temporal restarted');
      expect(verdict.findings).toEqual([]);
      const n = LIVES * LIFECYCLE_OPERATIONS;
      expect(verdict.line).toBe(`${n} operations, ${n} ended, 0 lost, 0 duplicated, 0 orphaned`);
    },
    TIMEOUT_MS,
  );

  endsWithSecretsSweep(landscape);
});
