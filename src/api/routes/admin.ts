/**
 * The admin API's routes, under `/admin`: listings of the records, the update of one instance, the
 * forced removal of a stuck record, the custom actions of an instance's plan, the rollout of a plan,
 * the listing and steering of every rollout (of plans, of referenced objects' changes and drains of
 * clusters), the drain of a cluster, the dry run of a plan change and the adoption of a Service Fabrik
 * landscape's records. Each reads its parameters, calls one
 * AdminService method and sets the answer; errors are the OSB API's (`{error, description}`).
 */
import { MAX_DRY_RUN_LIMIT } from '../../admin/dry-run.js';
import {
  parseActionRequest,
  parseDryRun,
  parseMoveRequest,
  parseDryRunSpec,
  parsePageRequest,
  parseRecordFilter,
  parseRolloutSettings,
} from '../../admin/requests.js';
import type { AdminService, RecordKind } from '../../admin/service.js';
import { notFound } from '../../osb/errors.js';
import { readJsonBody } from '../body.js';
import type { AdminState } from '../middleware.js';
import type { RouteContext, RouteTable } from '../router.js';

export interface AdminRouteDeps {
  readonly admin: AdminService;
  /** Largest request body accepted, in bytes. */
  readonly maxBodyBytes: number;
}

type AdminContext = RouteContext<AdminState>;

function param(
  ctx: AdminContext,
  name:
    'instance_id' | 'binding_id' | 'plan_id' | 'action' | 'run_id' | 'secret' | 'rollout_id' | 'cluster_id',
): string {
  const value = ctx.params[name];
  if (value === undefined) throw new Error(`The route has no :${name} parameter.`);
  return value;
}

export function adminRoutes(router: RouteTable<AdminState>, { admin, maxBodyBytes }: AdminRouteDeps): void {
  /** GET /admin/instances?service&plan&cluster&state&revision&limit&continue */
  router.get('/instances', async (ctx) => {
    ctx.body = await admin.listInstances(parseRecordFilter(ctx.query), parsePageRequest(ctx.query));
  });

  /** GET /admin/bindings?service&plan&cluster&state&limit&continue */
  router.get('/bindings', async (ctx) => {
    ctx.body = await admin.listBindings(parseRecordFilter(ctx.query), parsePageRequest(ctx.query));
  });

  /** POST /admin/instances/:instance_id/update: to its plan's current revision; 202 with the operation. */
  router.post('/instances/:instance_id/update', async (ctx) => {
    ctx.status = 202;
    ctx.body = await admin.updateInstance(param(ctx, 'instance_id'), ctx.state.requestedBy);
  });

  const forceRemove = (kind: RecordKind, name: 'instance_id' | 'binding_id') => async (ctx: AdminContext) => {
    ctx.body = await admin.forceRemove(kind, param(ctx, name), ctx.state.requestedBy);
  };
  /** POST /admin/instances/:instance_id/force-remove */
  router.post('/instances/:instance_id/force-remove', forceRemove('instance', 'instance_id'));
  /** POST /admin/bindings/:binding_id/force-remove */
  router.post('/bindings/:binding_id/force-remove', forceRemove('binding', 'binding_id'));

  /**
   * POST /admin/adopt?dryRun: adopts the records Service Fabrik left in the master (with
   * `dryRun=true`, only lists them); the report of what was adopted and what cannot be, and why.
   */
  router.post('/adopt', async (ctx) => {
    ctx.body = await admin.adoptServiceFabrik(parseDryRun(ctx.query), ctx.state.requestedBy);
  });

  actionRoutes(router, { admin, maxBodyBytes });

  const ROLLOUT = '/plans/:plan_id/rollout';
  /** GET /admin/plans/:plan_id/rollout: its progress; 404 when the plan never had one. */
  router.get(ROLLOUT, async (ctx) => {
    const planId = param(ctx, 'plan_id');
    const progress = await admin.rollouts.progress(planId);
    if (!progress) throw notFound(`The plan ${planId} has no rollout.`);
    ctx.body = progress;
  });

  /** POST /admin/plans/:plan_id/rollout: starts (or redirects) the rollout of the plan's current revision. */
  router.post(ROLLOUT, async (ctx) => {
    const settings = parseRolloutSettings(await readJsonBody(ctx, maxBodyBytes));
    ctx.status = 202;
    ctx.body = await admin.rollouts.start(param(ctx, 'plan_id'), settings, ctx.state.requestedBy);
  });

  for (const action of ['pause', 'resume', 'abort'] as const) {
    /**
     * POST /admin/plans/:plan_id/rollout/{pause,resume,abort}: 200 with the rollout's progress once
     * it took the command; 409 with why when its state does not allow it; 404 when there is none.
     */
    router.post(`${ROLLOUT}/${action}`, async (ctx) => {
      ctx.body = await admin.rollouts[action](param(ctx, 'plan_id'));
    });
  }

  /**
   * GET /admin/rollouts?limit: the rollouts of plans (kind `plan`) and of referenced objects'
   * changes (kind `reference`), newest first, each with its id and its progress as last shown.
   */
  router.get('/rollouts', async (ctx) => {
    const { limit } = parsePageRequest(ctx.query);
    ctx.body = { items: await admin.rollouts.list(limit ?? DEFAULT_ROLLOUT_LIST) };
  });

  /** GET /admin/rollouts/:rollout_id (the id URL-encoded): its progress; 404 when there is none. */
  router.get('/rollouts/:rollout_id', async (ctx) => {
    const rolloutId = param(ctx, 'rollout_id');
    const progress = await admin.rollouts.progressOf(rolloutId);
    if (!progress) throw notFound(`There is no rollout ${rolloutId}.`);
    ctx.body = progress;
  });

  for (const action of ['pause', 'resume', 'abort'] as const) {
    /** POST /admin/rollouts/:rollout_id/{pause,resume,abort}: as the plan's rollout's, for any rollout. */
    router.post(`/rollouts/:rollout_id/${action}`, async (ctx) => {
      ctx.body = await admin.rollouts.steer(param(ctx, 'rollout_id'), action);
    });
  }

  /**
   * POST /admin/clusters/:cluster_id/drain, body the rollout settings (optional): cordons the
   * cluster and starts its drain (or redirects the running one to new settings); 202 with its
   * progress, steered and listed as a rollout (kind `drain`); 404 for a cluster not registered.
   */
  router.post('/clusters/:cluster_id/drain', async (ctx) => {
    const settings = parseRolloutSettings(await readJsonBody(ctx, maxBodyBytes));
    ctx.status = 202;
    ctx.body = await admin.rollouts.drain(param(ctx, 'cluster_id'), settings, ctx.state.requestedBy);
  });

  dryRunRoutes(router, { admin, maxBodyBytes });
}

/** Rollouts listed when the request names no limit. */
const DEFAULT_ROLLOUT_LIST = 50;

/**
 * POST /admin/plans/:plan_id/dry-run?limit&continue with `{"spec": <the plan's new spec>}`: what
 * applying the spec would change in each instance of one page of the plan's; nothing is applied.
 */
function dryRunRoutes(router: RouteTable<AdminState>, { admin, maxBodyBytes }: AdminRouteDeps): void {
  router.post('/plans/:plan_id/dry-run', async (ctx) => {
    const planId = param(ctx, 'plan_id');
    const page = parsePageRequest(ctx.query, MAX_DRY_RUN_LIMIT);
    const spec = parseDryRunSpec(await readJsonBody(ctx, maxBodyBytes), planId);
    ctx.body = await admin.dryRuns.planChange({ planId, spec, ...page });
  });
}

/** The custom actions of an instance's plan (`x-<name>`): run one, and read where a run stands. */
function actionRoutes(router: RouteTable<AdminState>, { admin, maxBodyBytes }: AdminRouteDeps): void {
  const ACTION = '/instances/:instance_id/actions/:action';
  /** POST /admin/instances/:instance_id/actions/:action, body `{parameters?}`: 202 with the run. */
  router.post(ACTION, async (ctx) => {
    const parameters = parseActionRequest(await readJsonBody(ctx, maxBodyBytes));
    ctx.status = 202;
    ctx.body = await admin.runAction(
      param(ctx, 'instance_id'),
      param(ctx, 'action'),
      parameters,
      ctx.state.requestedBy,
    );
  });

  /**
   * POST /admin/instances/:instance_id/secrets/:secret/rotate: the next version of a generated
   * secret; 202 with the run of the action `x-rotate-secret`, whose state the GET below tells.
   */
  router.post('/instances/:instance_id/secrets/:secret/rotate', async (ctx) => {
    ctx.status = 202;
    ctx.body = await admin.rotateSecret(
      param(ctx, 'instance_id'),
      param(ctx, 'secret'),
      ctx.state.requestedBy,
    );
  });

  /**
   * POST /admin/instances/:instance_id/move, body `{cluster?}`: 202 with the run of the action
   * `move`, whose state the GET below tells (action `move`).
   */
  router.post('/instances/:instance_id/move', async (ctx) => {
    const { cluster } = parseMoveRequest(await readJsonBody(ctx, maxBodyBytes));
    ctx.status = 202;
    ctx.body = await admin.moveInstance(param(ctx, 'instance_id'), cluster, ctx.state.requestedBy);
  });

  /** GET /admin/instances/:instance_id/actions/:action/:run_id: where the run stands. */
  router.get(`${ACTION}/:run_id`, async (ctx) => {
    ctx.body = await admin.actionState(param(ctx, 'instance_id'), param(ctx, 'action'), param(ctx, 'run_id'));
  });
}
