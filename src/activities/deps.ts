/**
 * What activities are given: the clients and the catalog. Only the worker builds real ones; the
 * activity factories receive them (dependency injection), so each activity stays small.
 */
import type { CatalogCache } from '../kube/catalog-cache.js';
import type { ClusterDirectory } from '../kube/cluster-directory.js';
import type { SchedulingConfig } from '../scheduling/index.js';
import type { ClusterCapabilities, RenderData } from '../templates/index.js';
import type { KubeObject, PlanTemplate, ReferencedObject, TemplateAction } from '../resources/types.js';
import type { StatusWakeups } from './status-wakeups.js';

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
  /** Follows the objects the instances' references read, to update an instance when one changes. @default none */
  readonly followedReferences?: ReferenceFollower;
}

/** Hears which objects an instance's references read (followed-references.ts). */
export interface ReferenceFollower {
  /** From now on, a change of one of `references` (on cluster `clusterId`) updates the instance; none: it follows none. */
  follow(instanceId: string, clusterId: string, references: readonly ReferencedObject[]): void;
}
