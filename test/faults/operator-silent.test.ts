/**
 * Fault: the operator never reports. The plan's status template never says the provision is done,
 * and the plan's `maximum_polling_duration` is short: the operation fails at its deadline with a
 * description that says so, the instance stays in a state the platform can act on, and the next
 * update (to the plan that answers) or deprovision works. The audit finds the failed provision
 * failed, everything else succeeded, and nothing left behind.
 */
import { endsWithSecretsSweep, faultLandscape } from '../support/fault-environment.js';
import { installFaultPlans, PLAN_ID, SILENT_DEADLINE_SECONDS, SILENT_PLAN_ID } from '../support/fault-run.js';
import { osbClient } from '../support/osb.js';

describe('fault: the operator never reports', () => {
  const landscape = faultLandscape('operator-silent');

  test('the provision fails at its deadline, clearly; the next update or deprovision works', async () => {
    const system = await landscape.start('all');
    await installFaultPlans(system.url);
    const platform = landscape.platform(() => system.url);
    const osb = osbClient(system.url);

    // GIVEN two provisions of the plan whose status never comes
    const started = Date.now();
    const [updated, deprovisioned] = await Promise.all([
      platform.provision(SILENT_PLAN_ID, 'failed'),
      platform.provision(SILENT_PLAN_ID, 'failed'),
    ]);

    // THEN each fails at its deadline, saying so, and the instance can still be acted on
    expect([updated.state, deprovisioned.state]).toEqual(['failed', 'failed']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(SILENT_DEADLINE_SECONDS * 1000);
    const last = await osb('GET', `/v2/service_instances/${updated.id}/last_operation`);
    expect(last.status).toBe(200);
    expect(last.body).toMatchObject({ state: 'failed' });
    expect(String(last.body.description)).toMatch(
      new RegExp(`did not report the outcome within ${SILENT_DEADLINE_SECONDS} s`),
    );
    expect(last.body.instance_usable).not.toBe(false);

    // WHEN the platform updates one to the plan that answers, and deprovisions the other
    // THEN both succeed
    const [update, deprovision] = await Promise.all([
      platform.update(updated.id, { after: 'deadline' }, PLAN_ID),
      platform.deprovision(deprovisioned.id, SILENT_PLAN_ID),
    ]);
    expect([update, deprovision]).toEqual(['succeeded', 'succeeded']);
    // AND the updated one deprovisions too, afterwards
    expect(await platform.deprovision(updated.id, PLAN_ID)).toBe('succeeded');

    expect(platform.surprises).toEqual([]);
    const verdict = await landscape.audit(platform, 'operator never reports');
    expect(verdict.findings).toEqual([]);
    expect(verdict.line).toBe('5 operations, 5 ended, 0 lost, 0 duplicated, 0 orphaned');
  }, 300_000);

  endsWithSecretsSweep(landscape);
});
