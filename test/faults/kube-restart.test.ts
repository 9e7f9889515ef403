/**
 * Fault: Kubernetes goes away under running operations and comes back. First the sister cluster's
 * apiserver is stopped and started again; then etcd, under every apiserver, is SIGKILLed and
 * started again on its data. Operations wait and complete, and the audit finds nothing lost,
 * duplicated or left behind.
 */
import { eventually } from '../support/env.js';
import { endsWithSecretsSweep, faultLandscape } from '../support/fault-environment.js';
import { faultSizes, installFaultPlans, LIFECYCLE_OPERATIONS } from '../support/fault-run.js';
import type { SystemProcess } from '../support/system.js';

/** INTEROP_FAULT_OPERATIONS sizes each run (default 20); each server restarts once. */
const LIVES = Math.ceil(faultSizes({ operations: 20, kills: 1 }).operations / LIFECYCLE_OPERATIONS);
/** Time for the run: it grows with the size (the assertions are on outcomes, never on time). */
const TIMEOUT_MS = 300_000 + LIVES * 15_000;
/** How long Kubernetes stays away. */
const OUTAGE_MS = 8000;

describe('fault: an apiserver or etcd restarts while operations run', () => {
  const landscape = faultLandscape('kube-restart');
  let system: SystemProcess | undefined;
  /** Instances of the tests before, on the same servers. */
  const earlierInstances: string[] = [];

  beforeAll(async () => {
    system = await landscape.start('all');
    await installFaultPlans(system.url);
  }, 300_000);

  /** Runs lifecycles, takes Kubernetes away once operations are in flight, and audits. */
  async function underOutage(label: string, stop: () => Promise<void>, start: () => Promise<void>) {
    const platform = landscape.platform(() => system!.url);
    // GIVEN instances going through their lives, on the master and the sister by turns
    const done = Promise.all(Array.from({ length: LIVES }, (_, i) => platform.lifecycle(i % 2 === 0)));
    await eventually('operations in flight', async () => (platform.inFlight >= 2 ? true : undefined));
    // WHEN Kubernetes goes away for a while and comes back
    await stop();
    try {
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
    } finally {
      await start();
    }
    await done;
    // THEN every accepted operation ended and nothing is left behind
    expect(platform.surprises).toEqual([]);
    try {
      const verdict = await landscape.audit(platform, label, [...earlierInstances]);
      expect(verdict.findings).toEqual([]);
      const n = LIVES * LIFECYCLE_OPERATIONS;
      expect(verdict.line).toBe(`${n} operations, ${n} ended, 0 lost, 0 duplicated, 0 orphaned`);
    } finally {
      earlierInstances.push(...platform.instances.keys());
    }
  }

  test(
    'the sister apiserver restarts: operations wait and complete',
    () =>
      underOutage(
        'sister apiserver restarted',
        () => landscape.env.stopSister(),
        () => landscape.env.startSister(),
      ),
    TIMEOUT_MS,
  );

  test(
    'etcd restarts under every apiserver: operations wait and complete',
    () =>
      underOutage(
        'etcd restarted',
        () => landscape.env.killEtcd(),
        () => landscape.env.startEtcd(),
      ),
    TIMEOUT_MS,
  );

  endsWithSecretsSweep(landscape);
});
