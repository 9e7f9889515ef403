/**
 * The search attributes every operation workflow carries, so that the Temporal UI lists all
 * operations of one instance, binding, service, plan or cluster, of one kind, or in one state (all
 * Keyword; docs/operations.md has the list filters). Registered by the local dev server at start;
 * a production namespace registers them once (see the README).
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type { RolloutRequest } from '../admin/contract.js';
import type { OperationName } from './messages.js';

export const OsbInstanceId = defineSearchAttributeKey('OsbInstanceId', SearchAttributeType.KEYWORD);
export const OsbBindingId = defineSearchAttributeKey('OsbBindingId', SearchAttributeType.KEYWORD);
export const OsbServiceId = defineSearchAttributeKey('OsbServiceId', SearchAttributeType.KEYWORD);
export const OsbPlanId = defineSearchAttributeKey('OsbPlanId', SearchAttributeType.KEYWORD);
export const OsbClusterId = defineSearchAttributeKey('OsbClusterId', SearchAttributeType.KEYWORD);
export const OsbOperation = defineSearchAttributeKey('OsbOperation', SearchAttributeType.KEYWORD);
/** The operation's state: `in progress`, `succeeded` or `failed` (OperationState), as in its memo. */
export const OsbState = defineSearchAttributeKey('OsbState', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTE_NAMES = [
  OsbInstanceId.name,
  OsbBindingId.name,
  OsbServiceId.name,
  OsbPlanId.name,
  OsbClusterId.name,
  OsbOperation.name,
  OsbState.name,
] as const;

/**
 * The search attributes an operation's workflow starts with: the ids it works on, the operation (a
 * custom action by its name, `x-<name>`) and its state.
 */
export function operationSearchAttributes(
  type: OperationName,
  input: {
    readonly instanceId: string;
    readonly bindingId?: string;
    readonly serviceId: string;
    readonly planId: string;
  },
): SearchAttributePair[] {
  return [
    { key: OsbInstanceId, value: input.instanceId },
    ...(input.bindingId ? [{ key: OsbBindingId, value: input.bindingId }] : []),
    { key: OsbServiceId, value: input.serviceId },
    { key: OsbPlanId, value: input.planId },
    { key: OsbOperation, value: type },
    { key: OsbState, value: 'in progress' },
  ];
}

/** The `OsbOperation` of a plan's rollout, of the rollout of a referenced object's change, and of a cluster's drain. */
export const ROLLOUT_OPERATIONS = {
  plan: 'rollout',
  reference: 'reference-rollout',
  drain: 'drain',
} as const;

/**
 * The search attributes a rollout starts with: its plan and what it is (`OsbOperation` `rollout`
 * or `reference-rollout`); a reference rollout also the cluster of the object whose change it
 * rolls out, so the Temporal UI lists the rollouts of one plan, of one kind, or of one cluster's
 * objects. A drain: `OsbOperation` `drain` and the cluster it drains (no plan).
 */
export function rolloutSearchAttributes(request: RolloutRequest): SearchAttributePair[] {
  if (request.drain)
    return [
      { key: OsbOperation, value: ROLLOUT_OPERATIONS.drain },
      { key: OsbClusterId, value: request.drain.clusterId },
    ];
  return [
    ...(request.planId !== undefined ? [{ key: OsbPlanId, value: request.planId }] : []),
    { key: OsbOperation, value: ROLLOUT_OPERATIONS[request.reference ? 'reference' : 'plan'] },
    ...(request.reference ? [{ key: OsbClusterId, value: request.reference.clusterId }] : []),
  ];
}
