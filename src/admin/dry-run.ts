/**
 * The dry run of a plan change: for a plan spec not yet applied, what the plan's rollout would
 * change in each instance's objects, object by object and field by field, with nothing applied.
 * The admin API calls it; the broker layer runs it as a short workflow whose one activity renders
 * each instance's templates the way the update workflow does and asks the apiserver what applying
 * them would store (a server-side dry run), then compares that with the live object.
 *
 * Pure: types and names only.
 */
import type { SFPlanSpec } from '../resources/types.js';

/** Instances one page of a dry run covers when the request names no limit. */
export const DEFAULT_DRY_RUN_LIMIT = 50;

/** Most instances one page of a dry run may cover: a page is one activity, its report one payload. */
export const MAX_DRY_RUN_LIMIT = 200;

/** What a dry run is asked: the plan, its new spec, and which page of its instances. */
export interface PlanDryRunRequest {
  readonly planId: string;
  /** The spec the plan would get; its `id` and `serviceId` are the plan's. */
  readonly spec: SFPlanSpec;
  /** Instance records read for this page. @default {@link DEFAULT_DRY_RUN_LIMIT} */
  readonly limit?: number;
  /** The `continue` of the page before. @default the first page */
  readonly continue?: string;
}

/**
 * One field that would change, by its path in the object (`spec.postgresql.parameters.max_connections`,
 * `spec.users[1]`, `metadata.annotations["example.com/owner"]`). `old` is absent for a field the
 * change adds, `new` for one it removes. In a Secret's `data` and `stringData` only the key is
 * reported: `redacted` is set and neither value is.
 */
export interface FieldChange {
  readonly path: string;
  readonly old?: unknown;
  readonly new?: unknown;
  readonly redacted?: true;
}

/**
 * What would happen to one object of the instance: `added` (rendered, not there yet), `changed`
 * (with its fields), `unchanged`, or `removed` (recorded by the instance, no longer rendered: the
 * update deletes it).
 */
export type ObjectChangeKind = 'added' | 'changed' | 'unchanged' | 'removed';

export interface ObjectChange {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  readonly change: ObjectChangeKind;
  /** For `changed`: the fields that would change, in path order. */
  readonly fields?: readonly FieldChange[];
}

/** One instance in a dry run: its objects, or why they could not be rendered or compared. */
export interface InstanceDryRun {
  readonly instanceId: string;
  readonly clusterId?: string;
  /** The plan revision the instance is on now, when recorded. */
  readonly revision?: string;
  /** Every object the new spec renders for the instance, and those it would remove. */
  readonly objects: readonly ObjectChange[];
  /** Why the instance could not be dry run (a template error, a cluster that does not answer). */
  readonly error?: string;
}

/** What the dry run workflow is given: the new spec and the instances of one page. */
export interface DryRunInstances {
  readonly planId: string;
  readonly spec: SFPlanSpec;
  readonly instanceIds: readonly string[];
}

/** What the dry run workflow answers. */
export interface DryRunResult {
  /** The revision of the new spec. */
  readonly revision: string;
  /** The instances the plan's rollout would update (others of the page are left out). */
  readonly instances: readonly InstanceDryRun[];
}

/** The report of one page of a dry run. */
export interface PlanDryRunReport {
  readonly planId: string;
  /** The revision the new spec would have (`status.specHash` once applied). */
  readonly revision: string;
  /** The plan's revision now, when recorded. */
  readonly currentRevision?: string;
  /** The instances of this page the plan's rollout would update. */
  readonly instances: readonly InstanceDryRun[];
  /** How many of them would change, stay as they are, or failed to be dry run. */
  readonly summary: { readonly changed: number; readonly unchanged: number; readonly failed: number };
  /** The token of the next page of instances; absent on the last. */
  readonly continue?: string;
}

/** Dry runs, as the admin API asks for them. */
export interface DryRunControl {
  /**
   * Dry runs `spec` as the plan's new spec over one page of the plan's instances.
   *
   * @throws OsbError 404 for a plan not in the catalog; 400 for a spec that is not a valid spec of
   *   this plan (another id or service, or one the catalog would leave out).
   */
  planChange(request: PlanDryRunRequest): Promise<PlanDryRunReport>;
}

/** The summary of a page's instances. */
export function dryRunSummary(instances: readonly InstanceDryRun[]): PlanDryRunReport['summary'] {
  const failed = instances.filter((i) => i.error !== undefined).length;
  const changed = instances.filter(
    (i) => i.error === undefined && i.objects.some((o) => o.change !== 'unchanged'),
  ).length;
  return { changed, unchanged: instances.length - failed - changed, failed };
}

/** Workflow id of one dry run: unique per run, the plan and registry in it for the Temporal UI. */
export const dryRunWorkflowId = (namespace: string, planId: string, runId: string): string =>
  `dry-run/${namespace}/${planId}/${runId}`;
