/**
 * What activities are given: the clients and the catalog. Only the worker builds real ones; the
 * activity factories receive them (dependency injection), so each activity stays small.
 */
import type { CatalogCache } from '../kube/catalog-cache.js';
import type { ClusterDirectory } from '../kube/cluster-directory.js';
import type { SchedulingConfig } from '../scheduling/index.js';
import type { ClusterCapabilities, RenderData } from '../templates/index.js';
import type { ClusterClient } from '../kube/clients.js';
import type { MasterRecords } from './master-records.js';
import type { RunRecords } from './run-records.js';
import type { SeenSource } from '../resources/source-changes.js';
import type {
  AppliedResource,
  KubeObject,
  PlanTemplate,
  ReferencedObject,
  TemplateAction,
} from '../resources/types.js';

/** What a render needs besides its data: for a helm template, the target cluster's capabilities. */
export interface RenderContext {
  readonly capabilities?: ClusterCapabilities;
}

/** The rendering layer (src/templates), injected so activities never care how templates run. */
export interface Renderer {
  renderObjects(
    template: PlanTemplate,
    action: TemplateAction,
    data: RenderData,
    context?: RenderContext,
  ): Promise<KubeObject[]>;
  renderValues(template: PlanTemplate, action: TemplateAction, data: RenderData): Promise<unknown>;
}

export interface ActivityDeps {
  readonly clusters: ClusterDirectory;
  readonly catalog: Pick<CatalogCache, 'plan' | 'service' | 'plans'>;
  readonly renderer: Renderer;
  /** Namespace for all instances; each its own `sf-<id>` when unset. */
  readonly instanceNamespace?: string;
  /** Which scheduler places new instances. @default the master for every instance */
  readonly scheduling?: SchedulingConfig;
  /** Deadline of an operation whose plan has no maximum_polling_duration, in seconds. @default 3600 */
  readonly operationTimeoutSeconds?: number;
  /** Wakes the operations waiting for their operator when a source changes. @default none: they poll */
  readonly statusWakeups?: StatusWakeups;
  /** Follows the objects the instances' references read, to roll out a change of one to its readers. @default none */
  readonly followedReferences?: ReferenceFollower;
  /**
   * How the operation steps read and write the instance and binding records.
   * @default on the master, with `clusters.master`
   */
  readonly records?: MasterRecords;
  /** The records each operation's run last read or wrote, kept between its steps. @default none: every step reads */
  readonly runRecords?: RunRecords;
}

/** Hears which objects an instance's references read (src/controllers/followed-references.ts). */
export interface ReferenceFollower {
  /**
   * From now on, a change of one of `references` (on cluster `clusterId`) is rolled out to the
   * instance, in the rollout of its plan `planId`'s instances that read it; none: it follows none.
   */
  follow(
    instanceId: string,
    planId: string,
    clusterId: string,
    references: readonly ReferencedObject[],
  ): void;
}

/**
 * The run of an operation's workflow that waits. A workflow id is the instance's or binding's, the
 * same for each of its operations: word left by one operation never wakes the next.
 */
export interface WaitingRun {
  readonly workflowId: string;
  readonly runId: string;
}

/** Hears which operations wait for a change of their sources (src/controllers/status-wakeups.ts). */
export interface StatusWakeups {
  /**
   * Until `release` is called (or the change that wakes it), a change to one of `sources` on
   * `cluster` wakes the operation's run `run`. Call it before the sources are read (or applied), so
   * that no change between the read and the wait goes unseen; resolves once the kinds' watches are
   * open. Then tell each source as it was read or applied (`seen`): a change it already showed
   * wakes nothing, nor one that leaves its operator behind a generation it showed (see
   * {@link SeenSource}); until told, a change is held, and wakes when told if it would have.
   */
  expect(cluster: ClusterClient, sources: readonly AppliedResource[], run: WaitingRun): Promise<WaitingWord>;
}

/** Word left with {@link StatusWakeups.expect}. */
export interface WaitingWord {
  /** Whether every watch that hears of the sources is open now: a change from now on is heard. */
  readonly heard: boolean;
  /**
   * The source as the operation saw it (read or applied); `undefined`: any change wakes. Returns
   * whether word is kept on it (a source of an operator's kind, not yet woken for).
   */
  seen(source: AppliedResource, seen: SeenSource | undefined): boolean;
  /**
   * Waits here, in the step, for the change that would wake the run, at most `withinMs`: that
   * change then wakes this wait instead of the run, and the word is gone. Resolves whether it came;
   * when it did not, the word stays, and the change, when it comes, wakes the run.
   */
  woken(withinMs: number): Promise<boolean>;
  release(): void;
}

/**
 * The instances placed on each cluster, counted from the master's instance records as a watch
 * keeps them (src/controllers/placed-instances.ts): what the cluster health round counts instead
 * of listing the records every round.
 */
export interface PlacedInstanceCounts {
  /**
   * Of this installation's instance records, how many name the cluster in their cluster-id label
   * (`placed`) and in their leaving label (`leaving`); undefined while the count is not to be
   * trusted (its first list has not ended, or it lists again after its watch lost its history).
   */
  of(clusterId: string): { readonly placed: number; readonly leaving: number } | undefined;
}
