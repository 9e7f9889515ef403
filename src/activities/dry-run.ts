/**
 * The dry run of a plan change: each instance's templates rendered with the plan's new spec, the
 * way the update a rollout starts renders them (the same reads, the same rendering, the instance
 * as that update records it), then applied as a server-side dry run, which stores nothing, and the
 * answer compared with the live object (object-diff.ts). Nothing is written anywhere: the copy of
 * the record on a sister cluster is dry run too.
 */
import { Context } from '@temporalio/activity';
import type { DryRunInstances, DryRunResult, InstanceDryRun, ObjectChange } from '../admin/dry-run.js';
import { getRecord } from '../kube/custom-objects.js';
import { applyObject, readObject } from '../kube/objects.js';
import { isGeneratedSecret } from '../resources/sfsecret.js';
import { FIELD_MANAGER, LABELS, instanceNamespace, planRevision, resourceName } from '../resources/names.js';
import { SFSERVICEINSTANCE, type SFPlan, type SFServiceInstance } from '../resources/types.js';
import type { InstanceRequest, Target } from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { staleResources } from './desired-objects.js';
import { objectChange, removedObject } from './object-diff.js';
import { resolveReferences } from './references.js';
import { recordedInstanceSpec } from './records.js';
import { describe, kubeCall, resourceRendering } from './resources.js';
import { rolledOut, rolloutRequest } from './rollouts.js';

/** Instances dry run at once by one activity: renderings and apiserver calls in flight stay few. */
export const DRY_RUN_CONCURRENCY = 4;

/** Tells the server the activity is alive; a no-op outside an activity (tests call activities directly). */
function heartbeat(): void {
  try {
    Context.current().heartbeat();
  } catch {
    // not running as an activity
  }
}

/** Runs `work` over `items`, at most `limit` at once, keeping their order. */
async function eachLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/** The instance's record as the update `request` records it: its spec replaced, its placement kept. */
const asRecorded = (record: SFServiceInstance, request: InstanceRequest): SFServiceInstance => ({
  ...record,
  spec: {
    ...(recordedInstanceSpec(request) as unknown as SFServiceInstance['spec']),
    ...(record.spec.clusterId ? { clusterId: record.spec.clusterId } : {}),
  },
});

/** A change with every field whose old or new value holds a value from a Secret reported as redacted. */
const withoutSecrets = (change: ObjectChange, holdsSecret: (value: unknown) => boolean): ObjectChange =>
  change.fields
    ? {
        ...change,
        fields: change.fields.map((field) =>
          holdsSecret(field.old) || holdsSecret(field.new) ? { path: field.path, redacted: true } : field,
        ),
      }
    : change;

export function dryRunActivities(deps: ActivityDeps) {
  const { clusters, catalog, instanceNamespace: shared, operationTimeoutSeconds } = deps;
  const rendering = resourceRendering(deps);

  /** What the update would change in one instance's objects; undefined when a rollout would not update it. */
  async function dryRunInstance(
    instanceId: string,
    plan: SFPlan,
    revision: string,
  ): Promise<InstanceDryRun | undefined> {
    const namespace = instanceNamespace(instanceId, shared);
    const name = resourceName(instanceId);
    const record = await getRecord<SFServiceInstance>(clusters.master, SFSERVICEINSTANCE, namespace, name);
    if (!record || !rolledOut(record) || record.spec.planId !== plan.spec.id) return undefined;
    const clusterId = record.spec.clusterId ?? clusters.masterId;
    const current = record.metadata.labels?.[LABELS.planRevision];
    const about = { instanceId, clusterId, ...(current ? { revision: current } : {}) };
    try {
      if (clusterId !== clusters.masterId && (await clusters.taskQueueOf(clusterId)))
        throw new Error(
          `cluster ${clusterId} is reached only by a worker of its own; a dry run does not reach it`,
        );
      const request = rolloutRequest(record, plan, revision, operationTimeoutSeconds);
      const target: Target = { instance: { instanceId, name, namespace, clusterId } };
      const loaded = await rendering.load(target, ({ instance }) => ({
        plan,
        instance: asRecorded(instance, request),
      }));
      const all = await rendering.desiredObjects(loaded, target, 'provision', () =>
        rendering.copyOnCluster(loaded, true),
      );
      if (!all) throw new Error(`plan ${plan.spec.name} has no provision template`);
      // SFSecrets are the worker's to generate, not objects of the apiserver: a dry run leaves them be.
      const desired = all.filter((d) => !isGeneratedSecret(d.object));
      const { cluster } = loaded;
      const sister = cluster === clusters.master ? undefined : cluster.id;
      // References are read as the update would read them; values from Secrets are not reported.
      const resolved = await resolveReferences(rendering.resolvingFor(loaded, 'provision'), desired);
      const objects: ObjectChange[] = [];
      for (const { object, ref } of resolved.desired) {
        const live = await kubeCall(
          `reading ${describe(ref, cluster.id)}`,
          () => readObject(cluster, ref),
          sister,
        );
        const after = await resolved.applying(() =>
          kubeCall(
            `dry-run applying ${describe(ref, cluster.id)}`,
            () => applyObject(cluster, object, FIELD_MANAGER, { dryRun: true }),
            sister,
          ),
        );
        objects.push(withoutSecrets(objectChange(ref, live, after), resolved.holdsSecret));
      }
      const rendered = desired.map((d) => d.ref);
      objects.push(...staleResources(record.status?.resources ?? [], rendered).map(removedObject));
      return { ...about, objects };
    } catch (err) {
      return { ...about, objects: [], error: err instanceof Error ? err.message : String(err) };
    }
  }

  return {
    /**
     * Dry runs `spec` as the plan's new spec over the instances named: for each one a rollout would
     * update, what its objects would become. An instance that cannot be rendered or compared is
     * reported with the error; the others go on.
     */
    async dryRunPlanChange({ planId, spec, instanceIds }: DryRunInstances): Promise<DryRunResult> {
      const current = catalog.plan(planId);
      const revision = planRevision(spec);
      if (!current) return { revision, instances: [] };
      const plan: SFPlan = { ...current, spec };
      const instances = await eachLimited(instanceIds, DRY_RUN_CONCURRENCY, async (id) => {
        const report = await dryRunInstance(id, plan, revision);
        heartbeat();
        return report;
      });
      return { revision, instances: instances.filter((i): i is InstanceDryRun => i !== undefined) };
    },
  };
}

export type DryRunActivities = ReturnType<typeof dryRunActivities>;
