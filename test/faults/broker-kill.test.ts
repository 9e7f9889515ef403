/**
 * Fault: the broker is SIGKILLed between accepting a request and answering it. The platform got no
 * answer and sends the same request again to a broker started anew: the retry is answered from the
 * same operation (202 with its operation, or 200 / 410 once it has finished), never with a second
 * one, and the audit finds exactly the operations accepted.
 *
 * The kill lands at a random moment of the request's handling; a kill that lands after the
 * workflow started and before the answer (the case that matters) is recognised by the run that
 * exists without an answer. Rounds go on until at least one did.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { bindingWorkflowId, instanceWorkflowId } from '../../src/resources/names.js';
import { operationString, type OperationType } from '../../src/workflows/messages.js';
import { temporalClient } from '../support/env.js';
import { endsWithSecretsSweep, faultLandscape } from '../support/fault-environment.js';
import {
  faultSizes,
  installFaultPlans,
  PLAN_ID,
  Platform,
  SERVICE_ID,
  type Operation,
} from '../support/fault-run.js';
import { osbClient, provisionBody } from '../support/osb.js';

/**
 * Instances whose four operations each get a kill, as many as INTEROP_FAULT_KILLS asks (default 12);
 * more while no kill has landed in the window.
 */
const INSTANCES = Math.ceil(faultSizes({ operations: 12, kills: 12 }).kills / 4);
const MAX_INSTANCES = INSTANCES + 5;
/** Time for the run: it grows with the size (the assertions are on outcomes, never on time). */
const TIMEOUT_MS = 300_000 + MAX_INSTANCES * 4 * 15_000;

describe('fault: the broker is killed between accepting a request and answering it', () => {
  const landscape = faultLandscape('broker-kill');
  let temporal: { client: Client; close(): Promise<void> } | undefined;

  afterAll(() => temporal?.close());

  test(
    'the retry of a request whose answer was lost gets the same operation, never a second one',
    async () => {
      let broker = await landscape.start('broker');
      await landscape.start('worker');
      await installFaultPlans(broker.url);
      temporal = await temporalClient(landscape.settings.payloadKeys);
      const platform = landscape.platform(() => broker.url);

      /** The latest run of the operation's workflow, if any. */
      const latestRun = async (what: Operation) => {
        const id = what.bindingId
          ? bindingWorkflowId(what.instanceId, what.bindingId)
          : instanceWorkflowId(what.instanceId);
        try {
          return (await temporal!.client.workflow.getHandle(id).describe()).runId;
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) return undefined;
          throw err;
        }
      };

      let inWindow = 0;
      const answers: string[] = [];
      /**
       * Sends the request, kills the broker at a random moment of its handling, starts it again and
       * sends the same request again, as the platform does; follows the operation to its end.
       */
      const withKill = async (what: Operation & { type: OperationType }, method: string, body: unknown) => {
        const request = Platform.request(what, method, body);
        const before = await latestRun(what);
        const first = osbClient(broker.url)(method, request.path, request.body).catch(() => undefined);
        await new Promise((r) => setTimeout(r, Math.random() * 80));
        await broker.kill();
        const answered = await first;
        broker = await landscape.start('broker');
        const run = await latestRun(what);
        const started = run !== undefined && run !== before ? run : undefined;
        if (!answered && started) inWindow += 1;

        // THEN the retry is answered from the operation the first request started, if it did
        const retry = await platform.send(method, request.path, request.body);
        answers.push(`${what.type}: ${answered?.status ?? 'no answer'}, retry ${retry.status}`);
        if (retry.status === 202) {
          const operation = String(retry.body.operation);
          if (started) expect(operation).toBe(operationString(what.type, started));
          if (answered?.status === 202) expect(operation).toBe(answered.body.operation);
          return platform.follow(what, operation);
        }
        // 200 (provisioned or bound alike) or 410 (already deleted): the first request's operation
        // ended meanwhile; it is the one accepted
        expect(started).toBeDefined();
        expect([200, 201, 410]).toContain(retry.status);
        return platform.follow(what, operationString(what.type, started!));
      };

      for (let n = 0; n < MAX_INSTANCES && (n < INSTANCES || inWindow === 0); n += 1) {
        const instanceId = randomUUID();
        const bindingId = randomUUID();
        const instance = { id: instanceId, live: true, bindings: new Map([[bindingId, true]]) };
        platform.instances.set(instanceId, instance);
        expect(
          await withKill({ instanceId, type: 'provision' }, 'PUT', provisionBody(SERVICE_ID, PLAN_ID)),
        ).toBe('succeeded');
        const binding = { instanceId, bindingId };
        expect(
          await withKill({ ...binding, type: 'bind' }, 'PUT', { service_id: SERVICE_ID, plan_id: PLAN_ID }),
        ).toBe('succeeded');
        await platform.fetchCredentials(instanceId, bindingId);
        expect(await withKill({ ...binding, type: 'unbind' }, 'DELETE', { plan_id: PLAN_ID })).toBe(
          'succeeded',
        );
        instance.bindings.set(bindingId, false);
        expect(await withKill({ instanceId, type: 'deprovision' }, 'DELETE', { plan_id: PLAN_ID })).toBe(
          'succeeded',
        );
        instance.live = false;
      }
      console.log(
        `[broker-kill] ${inWindow} kills between the start and the answer:\n  ${answers.join('\n  ')}`,
      );

      // THEN at least one kill landed between the start and the answer, and the audit finds one run
      // per accepted operation and nothing left behind
      expect(inWindow).toBeGreaterThan(0);
      expect(platform.surprises).toEqual([]);
      const verdict = await landscape.audit(platform, 'broker killed mid-request');
      expect(verdict.findings).toEqual([]);
      const n = platform.operations.length;
      expect(verdict.line).toBe(`${n} operations, ${n} ended, 0 lost, 0 duplicated, 0 orphaned`);
    },
    TIMEOUT_MS,
  );

  endsWithSecretsSweep(landscape);
});
