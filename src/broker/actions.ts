/**
 * Custom actions of a plan (`x-<name>` templates), run by an admin on an instance: the checks before
 * the run starts (the name, the instance, its plan's template, no other operation on the instance;
 * the instance claimed against its bindings' operations as an update is), the start of the action workflow under the instance's own workflow id, and the
 * state of a run, from its workflow's memo or, once Temporal has no history of it, from the
 * record's `status.lastAction`.
 */
import { badRequest, concurrencyError, conflict, notFound } from '../osb/errors.js';
import type { RequestMeta } from '../osb/service-broker.js';
import type { ActionStarted, ActionState } from '../admin/service.js';
import {
  actionRefusal,
  customActionProblem,
  customActionsOf,
  isCustomAction,
  type CustomAction,
} from '../resources/actions.js';
import { MOVE_OPERATION, migrationOf } from '../resources/migration.js';
import { instanceWorkflowId } from '../resources/names.js';
import { findTemplate } from '../templates/index.js';
import {
  ROTATE_SECRET_ACTION,
  operationString,
  type ActionRequest,
  type MoveRequest,
  type SecretRotationRequest,
} from '../workflows/messages.js';
import type { BrokerParts } from './deps.js';
import { settledStatus } from './last-operation.js';

/** What a run id looks like (Temporal's are UUIDs). */
const RUN_ID = /^[0-9a-f-]{1,64}$/;

/**
 * The action named in a request.
 *
 * @throws OsbError 400 when it is an OSB action or no well-formed custom action name.
 */
export function requestedAction(action: string): CustomAction {
  const problem = customActionProblem(action);
  if (problem) throw badRequest(problem);
  return action as CustomAction;
}

/** The custom actions of the broker. */
export function actionOperations({ deps, runs, records, digests }: BrokerParts) {
  /**
   * The instance's record and plan, once no operation runs on the instance or its bindings and
   * the instance can run `action`.
   */
  async function readyFor(instanceId: string, action: string) {
    const workflowId = instanceWorkflowId(instanceId);
    const [record, running] = await Promise.all([records.instance(instanceId), runs.running(workflowId)]);
    if (!record) throw notFound('The service instance does not exist.');
    if (running) {
      const other = running.memo?.operation ?? 'unknown';
      if (other === action)
        throw conflict(`${action} is already running on the instance (run ${running.runId}).`);
      throw concurrencyError(
        `Another operation (${other}) is in progress on the instance; run ${action} when it has finished.`,
      );
    }
    const refusal = actionRefusal(record);
    if (refusal) throw conflict(`${action} cannot run: ${refusal}.`);
    const plan = deps.catalog.plan(record.spec.planId);
    if (!plan)
      throw conflict(
        `${action} cannot run: the plan ${record.spec.planId} of the instance is not in the catalog.`,
      );
    return { workflowId, record, plan };
  }

  return {
    /**
     * Starts the rotation of the instance's generated secret `secret` (an SFSecret of its plan's
     * provision template): a run of the instance's workflow that makes the secret's next version,
     * applies the instance's objects with it and removes the versions nothing uses any more.
     *
     * @throws OsbError as {@link AdminService.rotateSecret} says.
     */
    async rotate(instanceId: string, secret: string, meta: RequestMeta): Promise<ActionStarted> {
      const action = ROTATE_SECRET_ACTION;
      const { workflowId, record, plan } = await readyFor(instanceId, action);
      const generated = record.status?.generatedSecrets ?? [];
      if (!generated.some((g) => g.name === secret)) {
        const names = generated.map((g) => g.name);
        throw notFound(
          `The service instance has no generated secret ${JSON.stringify(secret.slice(0, 80))}; ${names.length > 0 ? `its generated secrets are ${names.join(', ')}` : 'it has none'}.`,
        );
      }
      const parameters = { secret };
      const input: SecretRotationRequest = {
        instanceId,
        serviceId: record.spec.serviceId,
        planId: record.spec.planId,
        action,
        parameters,
        ...runs.envelope(meta, digests.action(instanceId, action, parameters), plan),
      };
      const started = await runs.start(action, workflowId, input, { instance: record });
      if (!started.handle)
        throw concurrencyError(
          `Another operation (${started.running.memo?.operation ?? 'unknown'}) started on the instance just now; run ${action} when it has finished.`,
        );
      const runId = started.handle.firstExecutionRunId;
      return { instanceId, action, workflowId, runId, operation: operationString(action, runId) };
    },

    /**
     * Starts the custom action `action` on the instance, with its parameters: a run of the
     * instance's workflow, which renders and applies the plan's `x-<name>` template and waits for
     * the status template's section of the same name.
     *
     * @throws OsbError as {@link AdminService.runAction} says.
     */
    async start(
      instanceId: string,
      name: string,
      parameters: Readonly<Record<string, unknown>> | undefined,
      meta: RequestMeta,
    ): Promise<ActionStarted> {
      const action = requestedAction(name);
      if (action === ROTATE_SECRET_ACTION)
        throw badRequest(
          `${action} is the rotation of a generated secret: POST /admin/instances/:instance_id/secrets/:name/rotate.`,
        );
      const { workflowId, record, plan } = await readyFor(instanceId, action);
      if (!findTemplate(plan, action)) {
        const offered = customActionsOf(plan.spec.templates);
        throw notFound(
          `Plan ${plan.spec.name} has no action ${action}; ${offered.length > 0 ? `its actions are ${offered.join(', ')}` : 'it has no custom actions'}.`,
        );
      }
      const input: ActionRequest = {
        instanceId,
        serviceId: record.spec.serviceId,
        planId: record.spec.planId,
        action,
        ...(parameters ? { parameters: { ...parameters } } : {}),
        ...runs.envelope(
          meta,
          digests.action(instanceId, action, parameters ? { ...parameters } : undefined),
          plan,
        ),
      };
      const started = await runs.start(action, workflowId, input, { instance: record });
      if (!started.handle)
        throw concurrencyError(
          `Another operation (${started.running.memo?.operation ?? 'unknown'}) started on the instance just now; run ${action} when it has finished.`,
        );
      const runId = started.handle.firstExecutionRunId;
      return { instanceId, action, workflowId, runId, operation: operationString(action, runId) };
    },

    /**
     * Starts the move of the instance to another cluster (`toClusterId`, else where its plan's
     * scheduler places it among the others): a run of the instance's workflow, claimed against
     * its bindings' operations as an update is.
     *
     * @throws OsbError as {@link AdminService.moveInstance} says.
     */
    async move(
      instanceId: string,
      toClusterId: string | undefined,
      reason: string | undefined,
      meta: RequestMeta,
    ): Promise<ActionStarted> {
      const action = MOVE_OPERATION;
      const { workflowId, record, plan } = await readyFor(instanceId, action);
      const how = migrationOf(plan);
      if ('refusal' in how) throw conflict(`The instance cannot move: ${how.refusal}.`);
      if (toClusterId !== undefined && toClusterId === record.spec.clusterId)
        throw conflict(`The instance is on cluster ${toClusterId} already.`);
      const parameters = toClusterId !== undefined ? { cluster: toClusterId } : undefined;
      const input: MoveRequest = {
        instanceId,
        serviceId: record.spec.serviceId,
        planId: record.spec.planId,
        ...(toClusterId !== undefined ? { toClusterId } : {}),
        ...(reason ? { reason } : {}),
        ...runs.envelope(meta, digests.action(instanceId, action, parameters), plan),
      };
      const started = await runs.start(action, workflowId, input, { instance: record });
      if (!started.handle)
        throw concurrencyError(
          `Another operation (${started.running.memo?.operation ?? 'unknown'}) started on the instance just now; move it when it has finished.`,
        );
      const runId = started.handle.firstExecutionRunId;
      return { instanceId, action, workflowId, runId, operation: operationString(action, runId) };
    },

    /**
     * Where the run `runId` of `action` on the instance stands: its workflow's memo (a run that
     * stopped without recording its end failed), else the record's `status.lastAction` when it is
     * that run.
     *
     * @throws OsbError 400 for a malformed action or run id; 404 when no such run is known.
     */
    async state(instanceId: string, name: string, runId: string): Promise<ActionState> {
      const action = name === MOVE_OPERATION ? MOVE_OPERATION : requestedAction(name);
      if (!RUN_ID.test(runId)) throw badRequest(`"${runId.slice(0, 80)}" is not a run id.`);
      const unknown = () => notFound(`No run ${runId} of ${action} on the service instance is known.`);
      const run = await runs.describe(instanceWorkflowId(instanceId), runId);
      if (run?.memo) {
        if (run.memo.operation !== action) throw unknown();
        const status = settledStatus(run.memo, run);
        return {
          instanceId,
          action,
          runId,
          state: status.state,
          ...(status.description ? { description: status.description } : {}),
        };
      }
      const last = (await records.instance(instanceId))?.status?.lastAction;
      if (
        !last ||
        last.runId !== runId ||
        last.operation !== action ||
        !(isCustomAction(last.operation) || last.operation === MOVE_OPERATION)
      )
        throw unknown();
      return {
        instanceId,
        action,
        runId,
        state: last.state,
        ...(last.description ? { description: last.description } : {}),
      };
    },
  };
}
