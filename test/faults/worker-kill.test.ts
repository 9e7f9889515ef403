/**
 * Fault: the worker is SIGKILLed at random moments while provisions, binds, updates, unbinds and
 * deprovisions run side by side, and started again each time. Every accepted operation must end
 * (succeeded: none is made to fail here), every instance must have exactly the objects its plan
 * renders, every binding exactly one credentials Secret, and nothing of what was deleted may stay,
 * in any namespace of any cluster.
 *
 * Size: INTEROP_FAULT_OPERATIONS (default 30) and INTEROP_FAULT_KILLS (default 5); the manual run
 * of docs/reliability.md uses 200 and 30.
 */
import { endsWithSecretsSweep, faultLandscape } from '../support/fault-environment.js';
import { faultSizes, installFaultPlans, LIFECYCLE_OPERATIONS } from '../support/fault-run.js';

const { operations, kills } = faultSizes({ operations: 30, kills: 5 });
/** Time for the run: generous, it grows with the size (the assertions are on outcomes, never on time). */
const TIMEOUT_MS = 300_000 + (operations * 3000 + kills * 10_000);
/**
 * How soon a deletion must end once its record is gone (its work done): a bound on a replayed step
 * retrying against what is already deleted, far above a worker's restart.
 */
const DELETION_ENDS_WITHIN_MS = 60_000;

describe('fault: the worker is killed while operations run', () => {
  const landscape = faultLandscape('worker-kill');

  test(
    `${operations} operations, ${kills} kills: each accepted operation ends once, nothing left behind`,
    async () => {
      const broker = await landscape.start('broker');
      let worker = await landscape.start('worker');
      await installFaultPlans(broker.url);
      const platform = landscape.platform(() => broker.url);

      // GIVEN instances going through their lives side by side (half keep a binding, half end
      // deprovisioned), their starts spread over the time the kills take (each about a second apart
      // plus the worker's start), so that operations are in flight at every kill
      const lives = Math.ceil(operations / LIFECYCLE_OPERATIONS);
      const spread = (kills * 4000) / lives;
      let running = lives;
      const done = Promise.all(
        Array.from({ length: lives }, async (_, i) => {
          await new Promise((r) => setTimeout(r, i * spread));
          await platform.lifecycle(i % 2 === 0).finally(() => {
            running -= 1;
          });
        }),
      );

      // WHEN the worker is SIGKILLed at random moments while operations are in flight, and started again
      const killedWith: number[] = [];
      while (killedWith.length < kills && running > 0) {
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 1000));
        if (platform.inFlight === 0) continue;
        killedWith.push(platform.inFlight);
        await worker.kill();
        worker = await landscape.start('worker');
      }
      await done;

      // THEN every kill hit operations in flight, and the audit finds every operation ended and nothing else
      expect(killedWith).toHaveLength(kills);
      expect(killedWith.every((n) => n > 0)).toBe(true);
      expect(platform.surprises).toEqual([]);
      // AND every deletion ended soon after its work was done, however often its steps ran again
      // (each life unbinds once; every second one then deprovisions)
      expect(platform.deletions).toHaveLength(lives + Math.floor(lives / 2));
      const latest = Math.max(0, ...platform.deletions.map((d) => d.lateMs));
      console.log(`[deletions] ${platform.deletions.length} ended, the latest ${latest} ms after its work`);
      expect(platform.deletions.filter((d) => d.lateMs > DELETION_ENDS_WITHIN_MS)).toEqual([]);
      const verdict = await landscape.audit(platform, `worker killed ${kills} times`);
      expect(verdict.findings).toEqual([]);
      expect(verdict.line).toBe(
        `${lives * LIFECYCLE_OPERATIONS} operations, ${lives * LIFECYCLE_OPERATIONS} ended, 0 lost, 0 duplicated, 0 orphaned`,
      );
    },
    TIMEOUT_MS,
  );

  endsWithSecretsSweep(landscape);
});
