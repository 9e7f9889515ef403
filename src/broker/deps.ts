/** What the broker is built from, what its operations share, and the catalog lookup they use. */
import type { Client } from '@temporalio/client';
import type { CatalogCache } from '../kube/catalog-cache.js';
import type { ClusterClient } from '../kube/clients.js';
import type { OperationStartRecorder } from '../metrics/recorders.js';
import { badRequest } from '../osb/errors.js';
import type { SFPlan } from '../resources/types.js';
import type { EntitlementService } from './quotas.js';
import type { Records } from './records.js';
import type { RequestDigests } from './request-digest.js';
import type { WorkflowRuns } from './workflow-runs.js';

export interface BrokerDeps {
  readonly client: Client;
  readonly taskQueue: string;
  readonly master: ClusterClient;
  readonly catalog: CatalogCache;
  /** One namespace for all instances; each its own when unset. */
  readonly instanceNamespace?: string;
  /** How long a synchronous request waits for its workflow before it rolls the operation back. */
  readonly syncTimeoutMs: number;
  /** Deadline of an operation whose plan sets no maximum_polling_duration. */
  readonly operationTimeoutSeconds: number;
  /** The first wait between two status checks of the operations started. @default the workflows' own */
  readonly statusPollMs?: number;
  /**
   * Keys of the request digests (so a digest reveals nothing of the parameters): the first is the
   * one written; a digest stored under any of them is recognised.
   */
  readonly hashKeys: readonly Buffer[];
  /** Where each operation workflow the broker starts is counted. @default nowhere */
  readonly metrics?: OperationStartRecorder;
  /** The entitlement service asked before a provision or a plan change. @default none */
  readonly entitlements?: EntitlementService;
  /** Told why the entitlement service gave no usable answer when its failure policy allows. @default nothing */
  readonly onEntitlementUnanswered?: (reason: string) => void;
}

/** What the instance and binding operations work with. */
export interface BrokerParts {
  readonly deps: BrokerDeps;
  readonly runs: WorkflowRuns;
  readonly records: Records;
  readonly digests: RequestDigests;
}

/**
 * The plan a request names.
 *
 * @throws OsbError 400 when the catalog has none with this id.
 */
export function catalogPlan(catalog: CatalogCache, planId: string): SFPlan {
  const plan = catalog.plan(planId);
  if (!plan) throw badRequest(`Unknown plan_id ${planId}.`);
  return plan;
}
