/**
 * What a worker deployment's description says, in the words of an upgrade: which build is
 * current, which one ramps, and, for each build, whether its workers are still needed. Pure: no
 * Temporal client, so it is tested with plain descriptions.
 */

/** Where a build stands in its worker deployment. */
export type WorkerVersionState =
  /** Its workers poll, but no workflow was sent to it yet (it was never current nor ramping). */
  | 'inactive'
  /** New workflows start on it. */
  | 'current'
  /** A share of the new workflows start on it. */
  | 'ramping'
  /** No longer current, but pinned operations that started on it are still open: keep its workers. */
  | 'draining'
  /** No open workflow needs it: its workers may be removed. */
  | 'drained'
  /** Registered, and nothing more is known yet. */
  | 'created';

export interface WorkerVersionSummary {
  readonly buildId: string;
  readonly state: WorkerVersionState;
}

/** A worker deployment's routing and builds. */
export interface WorkerDeploymentSummary {
  readonly deploymentName: string;
  /** The build new workflows start on; unset before one is made current. */
  readonly current?: string;
  /** The build a share of new workflows start on. */
  readonly ramping?: { readonly buildId: string; readonly percent: number };
  readonly versions: readonly WorkerVersionSummary[];
}

/** The server's WorkerDeploymentVersionStatus, by number (temporal.api.enums.v1). */
const STATES: Record<number, WorkerVersionState> = {
  1: 'inactive',
  2: 'current',
  3: 'ramping',
  4: 'draining',
  5: 'drained',
  6: 'created',
};

/** The parts of a DescribeWorkerDeployment answer this reads. */
export interface WorkerDeploymentDescription {
  readonly name?: string | null;
  readonly routingConfig?: {
    readonly currentDeploymentVersion?: { readonly buildId?: string | null } | null;
    readonly rampingDeploymentVersion?: { readonly buildId?: string | null } | null;
    readonly rampingVersionPercentage?: number | null;
  } | null;
  readonly versionSummaries?:
    | readonly {
        readonly deploymentVersion?: { readonly buildId?: string | null } | null;
        readonly status?: number | null;
        /** VersionDrainageStatus: 1 draining, 2 drained (servers before the version status). */
        readonly drainageStatus?: number | null;
      }[]
    | null;
}

/** The summary of a worker deployment's description. */
export function deploymentSummary(
  deploymentName: string,
  info: WorkerDeploymentDescription,
): WorkerDeploymentSummary {
  const routing = info.routingConfig ?? {};
  const current = routing.currentDeploymentVersion?.buildId || undefined;
  const rampingId = routing.rampingDeploymentVersion?.buildId || undefined;
  const versions = (info.versionSummaries ?? []).flatMap((v) => {
    const buildId = v.deploymentVersion?.buildId;
    if (!buildId) return [];
    return [{ buildId, state: stateOf(v.status, v.drainageStatus) }];
  });
  return {
    deploymentName,
    ...(current ? { current } : {}),
    ...(rampingId ? { ramping: { buildId: rampingId, percent: routing.rampingVersionPercentage ?? 0 } } : {}),
    versions: versions.sort((a, b) => a.buildId.localeCompare(b.buildId)),
  };
}

function stateOf(status: number | null | undefined, drainage: number | null | undefined): WorkerVersionState {
  const known = status ? STATES[status] : undefined;
  if (known) return known;
  if (drainage === 1) return 'draining';
  if (drainage === 2) return 'drained';
  return 'created';
}

/**
 * Whether the workers of `buildId` may be removed: no open workflow needs them. A build the
 * deployment does not know (never polled, or deleted) needs none either.
 */
export function retirable(summary: WorkerDeploymentSummary, buildId: string): boolean {
  const version = summary.versions.find((v) => v.buildId === buildId);
  return !version || version.state === 'drained' || version.state === 'inactive';
}

/** One line per build, for people: `<build id>  <state>[ (ramping n%)]`. */
export function summaryText(summary: WorkerDeploymentSummary): string {
  if (summary.versions.length === 0) return `worker deployment ${summary.deploymentName}: no version yet\n`;
  const width = Math.max(...summary.versions.map((v) => v.buildId.length));
  const lines = summary.versions.map((v) => {
    const ramp =
      summary.ramping?.buildId === v.buildId ? ` (${summary.ramping.percent}% of new workflows)` : '';
    return `${v.buildId.padEnd(width)}  ${v.state}${ramp}`;
  });
  return `worker deployment ${summary.deploymentName}\n${lines.join('\n')}\n`;
}
