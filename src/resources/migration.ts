/**
 * How a plan's instances move from one cluster to another: what its `migrate` section declares.
 * The broker never guesses how to move a stateful service: a plan without the section, or one
 * that says `movable: false`, keeps its instances where they are. A plan that moves its instances
 * names the custom actions that carry their state: a backup taken on the source, restored on the
 * target once its provision succeeded; a plan without them moves by provisioning anew on the
 * target (a stateless service).
 *
 * Pure: no I/O, safe to import from workflows.
 */
import { customActionsOf, isCustomAction, type CustomAction } from './actions.js';

/** The name a move runs as: its operation in the memo, `OsbOperation` and the record's `lastAction`. */
export const MOVE_OPERATION = 'move';
export type MoveOperation = typeof MOVE_OPERATION;

/** A plan's `spec.migrate`, as written. */
export interface PlanMigrate {
  /** false: the plan's instances never move (`reason` says why). @default true when the section is there */
  readonly movable?: boolean;
  readonly reason?: string;
  /** The custom action that backs an instance up on its source cluster. */
  readonly backup?: string;
  /** The custom action that restores the backup on the target cluster, after its provision. */
  readonly restore?: string;
  /**
   * Whether an instance may be rebuilt on another cluster from its last backup when its cluster
   * is lost (offline past the landscape's grace period). @default false
   */
  readonly evacuate?: boolean;
}

/** How a plan's instances move, once checked. */
export interface Migration {
  readonly backup?: CustomAction;
  readonly restore?: CustomAction;
  readonly evacuate: boolean;
}

/** What the rules read of a plan. */
export interface MigratingPlan {
  readonly spec: {
    readonly name: string;
    readonly migrate?: PlanMigrate;
    readonly templates?: readonly { readonly action: string }[];
  };
}

/** How the plan's instances move, or why they cannot. */
export type MigrationOf = { readonly migration: Migration } | { readonly refusal: string };

/**
 * How the plan's instances move, or why they cannot: no `migrate` section, `movable: false`, or
 * a section naming an action that is no custom action of the plan, or a restore without a backup.
 */
export function migrationOf(plan: MigratingPlan): MigrationOf {
  const { name, migrate } = plan.spec;
  if (!migrate || typeof migrate !== 'object')
    return { refusal: `plan ${name} does not say how its instances move (its spec.migrate)` };
  if (migrate.movable === false)
    return {
      refusal: `plan ${name} says its instances cannot move${migrate.reason ? `: ${migrate.reason}` : ''}`,
    };
  const offered = customActionsOf(plan.spec.templates);
  const action = (field: 'backup' | 'restore'): CustomAction | string | undefined => {
    const value = migrate[field];
    if (value === undefined) return undefined;
    if (!isCustomAction(value) || !offered.includes(value))
      return `plan ${name} names ${JSON.stringify(String(value)).slice(0, 80)} as its ${field}, which is none of its custom actions${offered.length > 0 ? ` (${offered.join(', ')})` : ''}`;
    return value;
  };
  const backup = action('backup');
  const restore = action('restore');
  for (const problem of [backup, restore])
    if (problem !== undefined && !isCustomAction(problem)) return { refusal: problem };
  if (restore && !backup) return { refusal: `plan ${name} names a restore but no backup to restore from` };
  return {
    migration: {
      ...(backup ? { backup: backup as CustomAction } : {}),
      ...(restore ? { restore: restore as CustomAction } : {}),
      evacuate: migrate.evacuate === true,
    },
  };
}
