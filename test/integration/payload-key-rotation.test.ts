/**
 * A rotation of the payload keys, on the real servers: the landscape restarted with a new first key
 * and the old one still held (as docs/operations.md rotates them) recognises a platform's identical
 * repeat of a provision and a bind made before, answering 200 as before the rotation, and still
 * tells another request with the same ids from a repeat.
 */
import { randomUUID } from 'node:crypto';
import { generatePayloadKey } from '../../src/temporal/codec.js';
import { eventually } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import {
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';

describe('a rotation of the payload keys', () => {
  let settings: SystemSettings;
  let system: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;

  const start = async (payloadKeys: string) => {
    system = await startProcess('all', { ...settings, payloadKeys });
    osb = osbClient(system.url);
    await eventually('the plan in the catalog', async () =>
      JSON.stringify((await osb('GET', '/v2/catalog')).body).includes(PLAN_ID) ? true : undefined,
    );
  };

  beforeAll(async () => {
    operator = await startOperator();
    settings = await systemSettings();
    await installCatalog('examples/postgresql');
    await start(settings.payloadKeys);
  });
  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
  });

  test('GIVEN an instance and a binding made under the old key WHEN the first key changes THEN identical repeats answer 200 and other attributes 409', async () => {
    const instanceId = randomUUID();
    const bindingId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    const bindingPath = `${instancePath}/service_bindings/${bindingId}`;
    const provision = provisionBody(SERVICE_ID, PLAN_ID, { foo: 'bar' });
    const bind = { service_id: SERVICE_ID, plan_id: PLAN_ID, bind_resource: { app_guid: 'app' } };
    // GIVEN an instance and a binding made under the landscape's only key
    const accepted = await osb('PUT', `${instancePath}?accepts_incomplete=true`, provision);
    expect(accepted.status).toBe(202);
    const provisioned = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
      120_000,
    );
    expect(provisioned.body.state).toBe('succeeded');
    expect((await osb('PUT', bindingPath, bind)).status).toBe(201);

    // WHEN the landscape starts again with a new first key, the old one still held
    await system.stop();
    await start(`${generatePayloadKey('k2')},${settings.payloadKeys}`);

    // THEN the platform's identical repeats are answered as before the rotation
    const again = await osb('PUT', `${instancePath}?accepts_incomplete=true`, provision);
    expect([again.status, again.body.error]).toEqual([200, undefined]);
    const bound = await osb('PUT', bindingPath, bind);
    expect([bound.status, bound.body.error]).toEqual([200, undefined]);
    // AND a request with the same id and other attributes is still a conflict
    const other = await osb(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID, { foo: 'baz' }),
    );
    expect(other.status).toBe(409);
    expect(other.body.description).toMatch(/already exists with different attributes/);

    // AND the instance deletes as usual
    const deleting = await osb(
      'DELETE',
      `${instancePath}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}&accepts_incomplete=true`,
    );
    expect(deleting.status).toBe(202);
    const deleted = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
      120_000,
    );
    // (410 once the deprovision is done and its record gone, as OSB has it)
    expect(deleted.status === 410 ? 'gone' : deleted.body.state).toMatch(/^(gone|succeeded)$/);
  }, 240_000);
});
