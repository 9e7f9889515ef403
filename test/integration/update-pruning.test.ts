/**
 * What an update does with the objects its plan no longer renders, on the real servers: they are
 * deleted only once the status template reports the update done. An update that fails rolls back
 * onto them as they were (the same object, with what the operator wrote into it), and a later
 * update that succeeds prunes them. The plan's objects are ConfigMaps and its status template
 * reads the instance's parameters, so no operator is needed.
 */
import { randomUUID } from 'node:crypto';
import { applyObject, readObject } from '../../src/kube/objects.js';
import type { KubeObject, PlanTemplate, SFPlan } from '../../src/resources/types.js';
import { clusters, eventually, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { DESIGN_SERVICE_ID, installDesignPlan, planHelpers } from '../support/plans.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';

/** A ConfigMap `kept` always, and `extra` unless the parameters say `dropExtra`. */
const PROVISION: PlanTemplate = {
  action: 'provision',
  type: 'gotemplate',
  content: [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: kept',
    'data:',
    '  size: {{ .instance.spec.parameters.size | default "small" }}',
    '{{- if not .instance.spec.parameters.dropExtra }}',
    '---',
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: extra',
    'data:',
    '  extra: "yes"',
    '{{- end }}',
    '',
  ].join('\n'),
};

/** Every operation succeeds, but an update fails when its parameters say `failUpdate`. */
const STATUS: PlanTemplate = {
  action: 'status',
  type: 'gotemplate',
  content: [
    'provision:',
    '  state: succeeded',
    'update:',
    '{{- if .instance.spec.parameters.failUpdate }}',
    '  state: failed',
    '  description: the operator could not take the change',
    '{{- else }}',
    '  state: succeeded',
    '{{- end }}',
    'deprovision:',
    '  state: succeeded',
    '',
  ].join('\n'),
};

describe('an update prunes what its plan no longer renders only once it succeeded', () => {
  const [master] = clusters();
  const registry = unique('pruning');
  let design: SFPlan;
  let system: SystemProcess;
  let osb: OsbClient;
  const { planCopy } = planHelpers({ master: master!, registry, osb: () => osb, design: () => design });

  beforeAll(async () => {
    design = await installDesignPlan(master!, registry);
    system = await startProcess('all', await systemSettings({ INTEROP_NAMESPACE: registry }));
    osb = osbClient(system.url);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  type ConfigMap = { data?: Record<string, string>; metadata: { uid?: string } };
  const configMap = (instanceId: string, name: string) =>
    readObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name,
      namespace: `sf-${instanceId}`,
    }) as Promise<ConfigMap | undefined>;

  /** Starts an operation and waits until it settles; resolves with its last_operation answer. */
  async function operate(method: string, pathAndQuery: string, body: unknown, instancePath: string) {
    const accepted = await osb(method, pathAndQuery, body);
    expect(accepted.status).toBe(202);
    const operation = encodeURIComponent(String(accepted.body.operation));
    return untilSettled(osb, `${instancePath}/last_operation?operation=${operation}`, 120_000);
  }

  test('an update that fails leaves the object it dropped as it was; one that succeeds prunes it', async () => {
    // GIVEN an instance whose objects are `kept` and `extra`, and data the operator wrote into `extra`
    const planId = await planCopy(unique('pruned'), { templates: [PROVISION, STATUS], schemas: {} });
    const instanceId = randomUUID();
    const path = `/v2/service_instances/${instanceId}`;
    const update = (parameters: Record<string, unknown>) =>
      operate(
        'PATCH',
        `${path}?accepts_incomplete=true`,
        { service_id: DESIGN_SERVICE_ID, plan_id: planId, parameters },
        path,
      );
    const provisioned = await operate(
      'PUT',
      `${path}?accepts_incomplete=true`,
      provisionBody(DESIGN_SERVICE_ID, planId, { size: 'small' }),
      path,
    );
    expect(provisioned.body.state).toBe('succeeded');
    const before = (await configMap(instanceId, 'extra'))!;
    expect(before.data).toEqual({ extra: 'yes' });
    await applyObject(
      master!,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'extra', namespace: `sf-${instanceId}` },
        data: { written: 'by the operator' },
      } as KubeObject,
      'the-operator',
    );

    // WHEN an update drops `extra` and the status template reports it failed
    const failed = await update({ size: 'large', dropExtra: true, failUpdate: true });
    // THEN the update failed and rolled back, and `extra` is the same object, with what the
    // operator wrote: it was never deleted
    expect(failed.body.state).toBe('failed');
    expect(failed.body.description).toMatch(/the operator could not take the change.*rolled back/);
    const after = (await configMap(instanceId, 'extra'))!;
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.data).toEqual({ extra: 'yes', written: 'by the operator' });
    expect((await configMap(instanceId, 'kept'))?.data).toEqual({ size: 'small' });

    // WHEN an update drops `extra` and succeeds
    const succeeded = await update({ size: 'large', dropExtra: true });
    // THEN `extra` is pruned, and `kept` changed
    expect(succeeded.body.state).toBe('succeeded');
    await eventually('the extra ConfigMap pruned', async () =>
      (await configMap(instanceId, 'extra')) === undefined ? true : undefined,
    );
    expect((await configMap(instanceId, 'kept'))?.data).toEqual({ size: 'large' });
  }, 240_000);
});
