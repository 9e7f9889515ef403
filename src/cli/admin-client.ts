/**
 * The admin API as the command line calls it: one method a route, Basic authentication with the
 * admin credentials, and the API's errors (`{error, description}`) as {@link AdminApiError}.
 */
import type { AdoptionReport, RolloutProgress, RolloutSettings, RolloutSummary } from '../admin/contract.js';
import type { PlanDryRunReport } from '../admin/dry-run.js';
import type {
  ActionStarted,
  ActionState,
  BindingSummary,
  ForcedRemoval,
  InstanceSummary,
  InstanceUpdateStarted,
  Page,
  PageRequest,
  RecordFilter,
  RecordKind,
} from '../admin/service.js';

/** Where the admin API is and who calls it. */
export interface AdminEndpoint {
  /** The broker's URL, e.g. `https://broker.example.com`. */
  readonly url: string;
  readonly username: string;
  readonly password: string;
  /** The person behind the credentials, sent as `X-Requested-By` for the audit. */
  readonly requestedBy?: string;
}

/** An answer of the admin API other than a success, or no answer at all (`status` 0). */
export class AdminApiError extends Error {
  constructor(
    readonly status: number,
    readonly description: string,
    readonly code?: string,
  ) {
    super(description);
    this.name = 'AdminApiError';
  }
}

/** The query parameters of a listing, as the API names them. */
function listingQuery(filter: RecordFilter, page: PageRequest): string {
  const params = new URLSearchParams();
  const add = (name: string, value: string | number | undefined) => {
    if (value !== undefined && value !== '') params.set(name, String(value));
  };
  add('service', filter.serviceId);
  add('plan', filter.planId);
  add('cluster', filter.clusterId);
  add('state', filter.state);
  add('revision', filter.revision);
  add('limit', page.limit);
  add('continue', page.continue);
  const query = params.toString();
  return query ? `?${query}` : '';
}

export class AdminClient {
  constructor(
    private readonly endpoint: AdminEndpoint,
    private readonly fetchFn: typeof fetch = fetch,
  ) {}

  listInstances(filter: RecordFilter, page: PageRequest): Promise<Page<InstanceSummary>> {
    return this.call('GET', `/admin/instances${listingQuery(filter, page)}`);
  }

  listBindings(filter: RecordFilter, page: PageRequest): Promise<Page<BindingSummary>> {
    return this.call('GET', `/admin/bindings${listingQuery(filter, page)}`);
  }

  updateInstance(instanceId: string): Promise<InstanceUpdateStarted> {
    return this.call('POST', `/admin/instances/${encodeURIComponent(instanceId)}/update`);
  }

  forceRemove(kind: RecordKind, id: string): Promise<ForcedRemoval> {
    const path = kind === 'instance' ? 'instances' : 'bindings';
    return this.call('POST', `/admin/${path}/${encodeURIComponent(id)}/force-remove`);
  }

  /** POST /admin/adopt?dryRun: adopts (or lists) the records a Service Fabrik landscape left. */
  adoptServiceFabrik(dryRun: boolean): Promise<AdoptionReport> {
    return this.call('POST', `/admin/adopt?dryRun=${dryRun}`);
  }

  runAction(
    instanceId: string,
    action: string,
    parameters: Readonly<Record<string, unknown>> | undefined,
  ): Promise<ActionStarted> {
    return this.call('POST', actionPath(instanceId, action), parameters ? { parameters } : {});
  }

  rotateSecret(instanceId: string, secret: string): Promise<ActionStarted> {
    return this.call(
      'POST',
      `/admin/instances/${encodeURIComponent(instanceId)}/secrets/${encodeURIComponent(secret)}/rotate`,
    );
  }

  moveInstance(instanceId: string, cluster: string | undefined): Promise<ActionStarted> {
    return this.call(
      'POST',
      `/admin/instances/${encodeURIComponent(instanceId)}/move`,
      cluster !== undefined ? { cluster } : {},
    );
  }

  actionState(instanceId: string, action: string, runId: string): Promise<ActionState> {
    return this.call('GET', `${actionPath(instanceId, action)}/${encodeURIComponent(runId)}`);
  }

  startRollout(planId: string, settings: Partial<RolloutSettings>): Promise<RolloutProgress> {
    return this.call('POST', rolloutPath(planId), settings);
  }

  /** Pauses, resumes or aborts the plan's rollout: its progress once taken (a 409 says why it was refused). */
  steerRollout(planId: string, action: 'pause' | 'resume' | 'abort'): Promise<RolloutProgress> {
    return this.call('POST', `${rolloutPath(planId)}/${action}`);
  }

  /** Every rollout, of plans and of referenced objects' changes, newest first. */
  async listRollouts(): Promise<RolloutSummary[]> {
    return (await this.call<{ items: RolloutSummary[] }>('GET', '/admin/rollouts')).items;
  }

  /** Pauses, resumes or aborts any rollout by its id (as `listRollouts` names it). */
  steerRolloutById(rolloutId: string, action: 'pause' | 'resume' | 'abort'): Promise<RolloutProgress> {
    return this.call('POST', `/admin/rollouts/${encodeURIComponent(rolloutId)}/${action}`);
  }

  /** Cordons the cluster and starts its drain (or redirects the running one): its progress. */
  drainCluster(clusterId: string, settings: Partial<RolloutSettings>): Promise<RolloutProgress> {
    return this.call('POST', `/admin/clusters/${encodeURIComponent(clusterId)}/drain`, settings);
  }

  /** Any rollout's progress by its id (a drain's too); undefined when there is none. */
  async rolloutProgressById(rolloutId: string): Promise<RolloutProgress | undefined> {
    try {
      return await this.call<RolloutProgress>('GET', `/admin/rollouts/${encodeURIComponent(rolloutId)}`);
    } catch (err) {
      if (err instanceof AdminApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** The rollout's progress; undefined when the plan never had one. */
  async rolloutProgress(planId: string): Promise<RolloutProgress | undefined> {
    try {
      return await this.call<RolloutProgress>('GET', rolloutPath(planId));
    } catch (err) {
      if (err instanceof AdminApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** One page of the dry run of `spec` as the plan's new spec. */
  dryRunPlan(planId: string, spec: unknown, page: PageRequest): Promise<PlanDryRunReport> {
    return this.call('POST', `/admin/plans/${encodeURIComponent(planId)}/dry-run${listingQuery({}, page)}`, {
      spec,
    });
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const { url, username, password, requestedBy } = this.endpoint;
    const target = `${url.replace(/\/+$/, '')}${path}`;
    let response: Response;
    try {
      response = await this.fetchFn(target, {
        method,
        headers: {
          Authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
          Accept: 'application/json',
          ...(requestedBy ? { 'X-Requested-By': requestedBy } : {}),
          ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
      throw new AdminApiError(0, `cannot reach ${url}: ${cause}`);
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const { error, description } = (parsed ?? {}) as { error?: string; description?: string };
      throw new AdminApiError(
        response.status,
        description ?? `${method} ${path} answered ${response.status}`,
        error,
      );
    }
    if (parsed === undefined) throw new AdminApiError(response.status, `${method} ${path} answered no JSON`);
    return parsed as T;
  }
}

const rolloutPath = (planId: string) => `/admin/plans/${encodeURIComponent(planId)}/rollout`;

const actionPath = (instanceId: string, action: string) =>
  `/admin/instances/${encodeURIComponent(instanceId)}/actions/${encodeURIComponent(action)}`;
