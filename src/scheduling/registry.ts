/**
 * The registry: plugin names to factories, the five schedulers as lists of plugin names, and the
 * choice of a scheduler for an instance (the landscape's, or its plan's override).
 */
import { runScheduler, type EnabledPlugin, type Scheduler } from './framework.js';
import { labelSelector, NAME as LABEL_SELECTOR } from './plugins/label-selector.js';
import { leastUtilized, NAME as LEAST_UTILIZED } from './plugins/least-utilized.js';
import { master, NAME as MASTER } from './plugins/master.js';
import { resourceAware, NAME as RESOURCE_AWARE } from './plugins/resource-aware.js';
import { roundRobin, NAME as ROUND_ROBIN } from './plugins/round-robin.js';
import { schedulable, NAME as SCHEDULABLE } from './plugins/schedulable.js';
import type {
  ClusterSnapshot,
  Decision,
  PlacementRequest,
  Plugin,
  PluginOptions,
  SchedulingState,
} from './types.js';

export type { PluginOptions } from './types.js';

/** Makes a plugin from the options. */
export type PluginFactory = (options: PluginOptions) => Plugin;

/** Every plugin, by name. */
export const PLUGINS: Readonly<Record<string, PluginFactory>> = {
  [SCHEDULABLE]: (options) => schedulable(options),
  [MASTER]: (options) => master(options),
  [ROUND_ROBIN]: () => roundRobin(),
  [LEAST_UTILIZED]: () => leastUtilized(),
  [LABEL_SELECTOR]: () => labelSelector(),
  [RESOURCE_AWARE]: () => resourceAware(),
};

/** A plugin enabled by name in a scheduler's configuration. */
export interface PluginConfig {
  readonly name: string;
  /** Weight of its score. @default 1 */
  readonly weight?: number;
}

/** A scheduler's configuration: its name and its plugins by name, run in order. */
export interface SchedulerConfig {
  readonly name: string;
  readonly plugins: readonly (string | PluginConfig)[];
}

/** The schedulers a landscape or a plan can name. */
export const SCHEDULER_NAMES = [
  'default',
  'round-robin',
  'least-utilized',
  'label-selector',
  'resource-aware',
] as const;
export type SchedulerName = (typeof SCHEDULER_NAMES)[number];

/**
 * The plugins of each scheduler. `schedulable` comes first in all of them (and is added to any
 * configuration that leaves it out): offline, cordoned and terminated clusters are never chosen.
 */
export const SCHEDULERS: Readonly<Record<SchedulerName, SchedulerConfig>> = {
  /** The master, always. */
  default: { name: 'default', plugins: [SCHEDULABLE, MASTER] },
  /** Eligible clusters in turn, in id order. */
  'round-robin': { name: 'round-robin', plugins: [SCHEDULABLE, ROUND_ROBIN] },
  /** The eligible cluster with the fewest instances. */
  'least-utilized': { name: 'least-utilized', plugins: [SCHEDULABLE, LEAST_UTILIZED] },
  /** Clusters matching the plan's cluster selector; among them the fewest instances. */
  'label-selector': { name: 'label-selector', plugins: [SCHEDULABLE, LABEL_SELECTOR, LEAST_UTILIZED] },
  /** Clusters with room for the plan's requests; among them the most free capacity. */
  'resource-aware': { name: 'resource-aware', plugins: [SCHEDULABLE, RESOURCE_AWARE] },
};

/** A scheduler configuration that cannot be used (an unknown scheduler or plugin name, a bad weight). Classify by `name`, not `instanceof`. */
export class SchedulerConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchedulerConfigError';
  }
}

export function isSchedulerName(name: string): name is SchedulerName {
  return (SCHEDULER_NAMES as readonly string[]).includes(name);
}

/**
 * The scheduler's name, checked. `where` (a setting, a plan) goes into the error message.
 *
 * @throws SchedulerConfigError listing the known names.
 */
export function parseSchedulerName(name: string, where?: string): SchedulerName {
  const trimmed = name.trim();
  if (isSchedulerName(trimmed)) return trimmed;
  throw new SchedulerConfigError(
    `unknown scheduler "${name}"${where ? ` in ${where}` : ''}; known: ${SCHEDULER_NAMES.join(', ')}`,
  );
}

/**
 * A scheduler from its configuration: each plugin made by its factory, `schedulable` first.
 *
 * @throws SchedulerConfigError naming a plugin that is not registered, or a weight that is not positive.
 */
export function buildScheduler(config: SchedulerConfig, options: PluginOptions = {}): Scheduler {
  const entries = config.plugins.map((p) => (typeof p === 'string' ? { name: p } : p));
  if (!entries.some((p) => p.name === SCHEDULABLE)) entries.unshift({ name: SCHEDULABLE });
  const plugins: EnabledPlugin[] = entries.map(({ name, weight }) => {
    const factory = Object.prototype.hasOwnProperty.call(PLUGINS, name) ? PLUGINS[name] : undefined;
    if (!factory)
      throw new SchedulerConfigError(
        `scheduler ${config.name}: unknown plugin "${name}"; known: ${Object.keys(PLUGINS).join(', ')}`,
      );
    if (weight !== undefined && !(weight > 0 && Number.isFinite(weight)))
      throw new SchedulerConfigError(
        `scheduler ${config.name}: plugin ${name} has weight ${weight}; weights are positive`,
      );
    return { plugin: factory(options), ...(weight !== undefined ? { weight } : {}) };
  });
  return { name: config.name, plugins };
}

/** One placement to decide. */
export interface ScheduleInput {
  /** A scheduler's name, or a configuration of plugins by name. */
  readonly scheduler: SchedulerName | SchedulerConfig;
  /** Every registered cluster (see `clusterSnapshot`), in any order. */
  readonly clusters: readonly ClusterSnapshot[];
  readonly request: PlacementRequest;
  /** What the caller kept from earlier decisions (round robin's last choice). */
  readonly state?: SchedulingState;
  readonly options?: PluginOptions;
}

/**
 * Decides where the instance goes. Pure and deterministic: a workflow can call it. A decision
 * without `clusterId` means no cluster is eligible; its summary says why.
 *
 * @throws SchedulerConfigError for a scheduler or plugin name that is not registered.
 */
export function schedule(input: ScheduleInput): Decision {
  const config =
    typeof input.scheduler === 'string' ? SCHEDULERS[parseSchedulerName(input.scheduler)] : input.scheduler;
  return runScheduler(buildScheduler(config, input.options), input.clusters, input.request, input.state);
}

/** Which scheduler places instances: the landscape's, overridden per plan. */
export interface SchedulingConfig {
  /** The landscape's scheduler. @default 'default' */
  readonly scheduler?: SchedulerName;
  /** Plan id to the scheduler for that plan's instances, set by the landscape's operator. */
  readonly plans?: Readonly<Record<string, SchedulerName>>;
}

/**
 * The scheduler for an instance of the plan: the configuration's override for the plan id, else
 * the scheduler the plan itself names (`planScheduler`), else the landscape's, else `default`.
 *
 * @throws SchedulerConfigError when the plan names a scheduler that does not exist.
 */
export function schedulerForPlan(
  config: SchedulingConfig,
  planId: string,
  planScheduler?: string,
): SchedulerName {
  const override = config.plans && Object.prototype.hasOwnProperty.call(config.plans, planId);
  if (override) return config.plans![planId]!;
  if (planScheduler !== undefined && planScheduler.trim() !== '')
    return parseSchedulerName(planScheduler, `plan ${planId}`);
  return config.scheduler ?? 'default';
}

/**
 * Per-plan overrides from their text form, `<plan id>=<scheduler>` separated by commas
 * (`small=round-robin,large=resource-aware`). Blank: none.
 *
 * @throws SchedulerConfigError for an entry without `=` or with an unknown scheduler.
 */
export function parsePlanSchedulers(
  text: string,
  where = 'the per-plan schedulers',
): Record<string, SchedulerName> {
  const plans: Record<string, SchedulerName> = {};
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue;
    const at = entry.indexOf('=');
    const planId = at < 0 ? '' : entry.slice(0, at).trim();
    if (!planId) throw new SchedulerConfigError(`${where}: "${entry.trim()}" is not <plan id>=<scheduler>`);
    plans[planId] = parseSchedulerName(entry.slice(at + 1), `${where} (plan ${planId})`);
  }
  return plans;
}
