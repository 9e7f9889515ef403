/**
 * The status template's fields Service Fabrik's plans use, on the real servers: `response` is an
 * instance operation's description, and `instanceUsable` / `updateRepeatable` of a failed update
 * reach last_operation's `instance_usable` / `update_repeatable`. The records carry Service
 * Fabrik's labels beside ours. The plan's objects are ConfigMaps and its status template reads the
 * instance's parameters, so no operator is needed.
 */
import { randomUUID } from 'node:crypto';
import { getRecord } from '../../src/kube/custom-objects.js';
import { resourceName } from '../../src/resources/names.js';
import {
  SFSERVICEINSTANCE,
  type PlanTemplate,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { clusters, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { DESIGN_SERVICE_ID, installDesignPlan, planHelpers } from '../support/plans.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const PROVISION: PlanTemplate = {
  action: 'provision',
  type: 'gotemplate',
  content: [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: settings',
    'data:',
    '  size: {{ .instance.spec.parameters.size | default "small" }}',
    '',
  ].join('\n'),
};

/**
 * A provision succeeds and says so in `response`; an update asked to fail (`failUpdate`) says,
 * as text and as a boolean, that the instance is unusable and the update not repeatable.
 */
const STATUS: PlanTemplate = {
  action: 'status',
  type: 'gotemplate',
  content: [
    'provision:',
    '  state: succeeded',
    '  response: the settings are in place',
    'update:',
    '{{- if .instance.spec.parameters.failUpdate }}',
    '  state: failed',
    '  error: the settings could not be changed',
    '  instanceUsable: "false"',
    '  updateRepeatable: false',
    '{{- else }}',
    '  state: succeeded',
    '{{- end }}',
    'deprovision:',
    '  state: succeeded',
    '',
  ].join('\n'),
};

describe('the status template’s Service Fabrik fields', () => {
  const [master] = clusters();
  const registry = unique('sf-fields');
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

  async function operate(method: string, pathAndQuery: string, body: unknown, instancePath: string) {
    const accepted = await osb(method, pathAndQuery, body);
    expect(accepted.status).toBe(202);
    const operation = encodeURIComponent(String(accepted.body.operation));
    return untilSettled(osb, `${instancePath}/last_operation?operation=${operation}`, 120_000);
  }

  test('response is the description; a failed update says the instance is unusable and the update not repeatable', async () => {
    // GIVEN an instance of a plan whose status template speaks Service Fabrik's fields
    const planId = await planCopy(unique('sf-fields'), { templates: [PROVISION, STATUS], schemas: {} });
    const instanceId = randomUUID();
    const path = `/v2/service_instances/${instanceId}`;
    const provisioned = await operate(
      'PUT',
      `${path}?accepts_incomplete=true`,
      {
        ...provisionBody(DESIGN_SERVICE_ID, planId, { size: 'small' }),
        context: { platform: 'cloudfoundry', organization_guid: 'org-1', space_guid: 'space 1' },
      },
      path,
    );
    // THEN the provision's description is the template's response
    expect(provisioned.body).toEqual({ state: 'succeeded', description: 'the settings are in place' });
    // AND the record carries Service Fabrik's labels beside ours, and a value that is no label value is left out
    const record = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      resourceName(instanceId),
    );
    expect(record?.metadata.labels).toMatchObject({
      plan_id: planId,
      service_id: DESIGN_SERVICE_ID,
      platform: 'cloudfoundry',
      organization_guid: 'org-1',
      OWNER_INTEROPERATOR_NAMESPACE: registry,
      state: 'in_queue',
      'interoperator.servicefabrik.io/plan-id': planId,
    });
    expect(record?.metadata.labels).not.toHaveProperty('space_guid');

    // WHEN an update fails and its status template says the instance is unusable and the update not repeatable
    const failed = await operate(
      'PATCH',
      `${path}?accepts_incomplete=true`,
      { service_id: DESIGN_SERVICE_ID, plan_id: planId, parameters: { size: 'large', failUpdate: true } },
      path,
    );
    // THEN last_operation says so
    expect(failed.body.state).toBe('failed');
    expect(failed.body.description).toMatch(/the settings could not be changed/);
    expect(failed.body.instance_usable).toBe(false);
    expect(failed.body.update_repeatable).toBe(false);
    // AND the record's state label is the update's
    const updated = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      resourceName(instanceId),
    );
    expect(updated?.metadata.labels?.state).toBe('update');

    // WHEN an update that the template says nothing about fails... it does not: it succeeds
    const succeeded = await operate(
      'PATCH',
      `${path}?accepts_incomplete=true`,
      { service_id: DESIGN_SERVICE_ID, plan_id: planId, parameters: { size: 'large' } },
      path,
    );
    // THEN a success carries neither flag
    expect(succeeded.body.state).toBe('succeeded');
    expect(succeeded.body).not.toHaveProperty('instance_usable');
    expect(succeeded.body).not.toHaveProperty('update_repeatable');
  }, 240_000);
});
