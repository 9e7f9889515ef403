/**
 * The operator's resources of an instance or binding: fetch the plan's `sources`, render the
 * action's template over them and apply what it describes (server-side apply with our field
 * manager, owned by the record, every object recorded in its status, objects no longer rendered
 * pruned), read the `status` template, and delete what was applied. What to apply, prune and
 * delete is decided by desired-objects.ts, what the templates' values say by template-values.ts;
 * these activities do the reads and writes.
 */
import type { ClusterClient } from '../kube/clients.js';
import { getRecord, patchRecord, patchRecordStatus } from '../kube/custom-objects.js';
import { statusCodeOf } from '../kube/errors.js';
import { applyObject, deleteObject, readObject, releaseFields } from '../kube/objects.js';
import {
  FIELD_MANAGER,
  LABELS,
  bindingFieldManager,
  bindingSecretName,
  planRevision,
} from '../resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type AppliedResource,
  type KubeObject,
  type SFPlan,
  type SFService,
  type SFServiceBinding,
  type SFServiceInstance,
  type TemplateAction,
} from '../resources/types.js';
import { findTemplate, type RenderData } from '../templates/index.js';
import type { OperationType, StatusReport, Target } from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import {
  desiredObject,
  forbiddenNamespace,
  instanceResourcesOf,
  ownResourcesOf,
  recordedResources,
  responseSecret,
  staleResources,
} from './desired-objects.js';
import { FAILURE_TYPES, kubeFailure, retryable, terminal } from './failures.js';
import { bindingCopy, clusterFailure, instanceCopy } from './placement.js';
import {
  bindResponseText,
  forTemplate,
  readStatusSection,
  sourceReferences,
  unobservedSource,
} from './template-values.js';

/** What template data holds besides the sources: the records themselves. */
const RECORD_KEYS = new Set(['instance', 'plan', 'service', 'binding']);

interface Loaded {
  readonly cluster: ClusterClient;
  readonly instance: SFServiceInstance;
  readonly binding?: SFServiceBinding;
  readonly plan: SFPlan;
  readonly service: SFService;
}

const describe = (obj: AppliedResource, clusterId: string) =>
  `${obj.kind} ${obj.namespace ? `${obj.namespace}/` : ''}${obj.name} in cluster ${clusterId}`;

function templateFailure(err: unknown, action: string, plan: SFPlan): Error {
  const message = err instanceof Error ? err.message : String(err);
  // The renderer itself not being there (a worker shutting down) is no fault of the template: retry.
  if ((err as { reason?: unknown }).reason === 'unavailable') {
    return retryable(
      `The ${action} template of plan ${plan.spec.name} could not be rendered now: ${message}`,
    );
  }
  return terminal(
    `The ${action} template of plan ${plan.spec.name} failed: ${message}`,
    FAILURE_TYPES.template,
  );
}

/**
 * Runs a Kubernetes call; a failure says what it was doing and whether to retry. A sister cluster
 * (`sisterId`, undefined on the master) that does not answer is waited for.
 */
async function kubeCall<T>(what: string, call: () => Promise<T>, sisterId?: string): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const failure = kubeFailure(err, what);
    if (sisterId && statusCodeOf(err) === undefined) throw clusterFailure(sisterId, failure);
    throw failure;
  }
}

/** Runs a template; a failure names the template and the plan. */
async function render<T>(action: string, plan: SFPlan, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw templateFailure(err, action, plan);
  }
}

export function resourceActivities({ clusters, catalog, renderer }: ActivityDeps) {
  /** The id of a sister cluster, for waiting on it; undefined for the master. */
  const sisterId = (cluster: ClusterClient) => (cluster === clusters.master ? undefined : cluster.id);

  async function load(target: Target): Promise<Loaded> {
    const master = clusters.master;
    const { instance: ref } = target;
    const instance = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
    if (!instance) throw retryable(`instance ${ref.instanceId} has no record in ${ref.namespace}`);
    const plan = catalog.plan(instance.spec.planId);
    if (!plan) throw terminal(`plan ${instance.spec.planId} is not in the catalog`, FAILURE_TYPES.plan);
    const service = catalog.service(plan.spec.serviceId);
    if (!service) throw terminal(`service ${plan.spec.serviceId} is not in the catalog`, FAILURE_TYPES.plan);
    let binding: SFServiceBinding | undefined;
    if (target.binding) {
      binding = await getRecord<SFServiceBinding>(
        master,
        SFSERVICEBINDING,
        target.binding.namespace,
        target.binding.name,
      );
      if (!binding) throw retryable(`binding ${target.binding.bindingId} has no record`);
    }
    const clusterId = instance.spec.clusterId ?? ref.clusterId ?? clusters.masterId;
    let cluster: ClusterClient;
    try {
      cluster = await clusters.get(clusterId);
    } catch (err) {
      if (clusterId === clusters.masterId) throw err;
      throw clusterFailure(clusterId, err);
    }
    return { cluster, instance, plan, service, ...(binding ? { binding } : {}) };
  }

  /**
   * On a sister cluster, the copy there of the record that owns what the target applies: the
   * instance's (made again when missing), and for a binding the binding's, owned by the
   * instance's. Undefined on the master, which holds the records themselves.
   */
  async function copyOnCluster(loaded: Loaded): Promise<KubeObject | undefined> {
    const { cluster, instance, binding } = loaded;
    if (cluster === clusters.master) return undefined;
    const copy = await kubeCall(
      `copying instance ${instance.metadata.name} to cluster ${cluster.id}`,
      () => applyObject(cluster, instanceCopy(instance, cluster.id), FIELD_MANAGER),
      sisterId(cluster),
    );
    if (!binding) return copy;
    return kubeCall(
      `copying binding ${binding.metadata.name} to cluster ${cluster.id}`,
      () => applyObject(cluster, bindingCopy(binding, copy), FIELD_MANAGER),
      sisterId(cluster),
    );
  }

  /** The data templates see: the records, the plan and service, and the fetched sources. */
  async function templateData(loaded: Loaded, action: TemplateAction): Promise<RenderData> {
    const base: RenderData = {
      instance: forTemplate(loaded.instance),
      plan: forTemplate(loaded.plan),
      service: forTemplate(loaded.service),
      ...(loaded.binding ? { binding: forTemplate(loaded.binding) } : {}),
    };
    const sourcesTemplate = findTemplate(loaded.plan, 'sources');
    if (!sourcesTemplate) return base;
    const sources = await render(`sources (for ${action})`, loaded.plan, () =>
      renderer.renderValues(sourcesTemplate, 'sources', base),
    );
    const data: Record<string, unknown> = { ...base };
    const references = sourceReferences(sources, loaded.instance.metadata.namespace!);
    for (const [, source] of references) {
      const refused = forbiddenNamespace(
        source.namespace!,
        loaded.instance.metadata.namespace!,
        clusters.namespace,
      );
      if (refused)
        throw terminal(
          `the sources template of plan ${loaded.plan.spec.name} names ${source.kind} ${source.name} in ${refused}: an instance reads only its own namespace`,
          FAILURE_TYPES.template,
        );
    }
    for (const [key, source] of references) {
      const obj = await kubeCall(
        `reading source ${key} (${describe(source, loaded.cluster.id)})`,
        () => readObject(loaded.cluster, source),
        sisterId(loaded.cluster),
      );
      if (obj) Object.defineProperty(data, key, { value: forTemplate(obj), enumerable: true });
    }
    return data as RenderData;
  }

  /** Applied objects of the target that still exist. */
  async function remainingResources(loaded: Loaded): Promise<AppliedResource[]> {
    const instanceResources = loaded.instance.status?.resources ?? [];
    const mine = loaded.binding
      ? ownResourcesOf(loaded.binding.status?.resources ?? [], instanceResources)
      : instanceResources;
    const present: AppliedResource[] = [];
    for (const ref of mine) {
      const obj = await kubeCall(
        `reading ${describe(ref, loaded.cluster.id)}`,
        () => readObject(loaded.cluster, ref),
        sisterId(loaded.cluster),
      );
      if (obj) present.push(ref);
    }
    return present;
  }

  /** Writes a bind's response into the Secret `name`, owned by the binding's record. */
  async function writeResponse(binding: SFServiceBinding, name: string, response: unknown): Promise<void> {
    const text = bindResponseText(response);
    if ('error' in text) throw terminal(text.error, FAILURE_TYPES.template);
    await kubeCall(`writing the response of binding ${binding.spec.id}`, () =>
      applyObject(clusters.master, responseSecret(binding, name, text.json)),
    );
  }

  return {
    /**
     * Renders the action's template (provision, bind, unbind) and applies every object it
     * describes; records them in the record's status and, for the instance, prunes objects the
     * template no longer renders. Returns how many objects were applied.
     */
    async applyTemplate(target: Target, action: 'provision' | 'bind' | 'unbind'): Promise<number> {
      const loaded = await load(target);
      const template = findTemplate(loaded.plan, action);
      if (!template) {
        if (action === 'provision') {
          throw terminal(`plan ${loaded.plan.spec.name} has no provision template`, FAILURE_TYPES.plan);
        }
        return 0;
      }
      const data = await templateData(loaded, action);
      const objects = await render(action, loaded.plan, () => renderer.renderObjects(template, action, data));
      const { instance, binding, cluster } = loaded;
      const record = binding ?? instance;
      const copy = await copyOnCluster(loaded);
      const fieldManager = binding ? bindingFieldManager(binding.metadata.name) : FIELD_MANAGER;
      const desired = objects.map((rendered) =>
        desiredObject(rendered, {
          namespace: instance.metadata.namespace!,
          clusterId: cluster.id,
          masterId: clusters.master.id,
          instanceId: instance.spec.instanceId ?? target.instance.instanceId,
          record,
          ...(copy ? { copy } : {}),
          ...(target.binding
            ? {
                binding: {
                  bindingId: target.binding.bindingId,
                  instanceResources: instance.status?.resources ?? [],
                },
              }
            : {}),
        }),
      );
      // Every object is checked before any is applied: a refused one leaves nothing half done.
      for (const { ref } of desired) {
        const refused = forbiddenNamespace(ref.namespace!, instance.metadata.namespace!, clusters.namespace);
        if (refused)
          throw terminal(
            `the ${action} template of plan ${loaded.plan.spec.name} renders ${ref.kind} ${ref.name} in ${refused}: an instance's objects stay in its own namespace`,
            FAILURE_TYPES.template,
          );
      }
      const applied: AppliedResource[] = [];
      for (const { object, ref } of desired) {
        await kubeCall(
          `applying ${describe(ref, cluster.id)}`,
          () => applyObject(cluster, object, fieldManager),
          sisterId(cluster),
        );
        applied.push(ref);
      }
      const previous = record.status?.resources ?? [];
      if (!binding) {
        for (const stale of staleResources(previous, applied)) {
          await kubeCall(
            `pruning ${describe(stale, cluster.id)}`,
            () => deleteObject(cluster, stale),
            sisterId(cluster),
          );
        }
      }
      const revision = binding ? undefined : planRevision(loaded.plan.spec);
      await patchRecordStatus(
        clusters.master,
        binding ? SFSERVICEBINDING : SFSERVICEINSTANCE,
        record.metadata.namespace!,
        record.metadata.name,
        {
          resources: recordedResources(previous, applied, binding !== undefined),
          ...(revision ? { planRevision: revision } : {}),
        },
      );
      // The revision the instance is now on, as a label too: rollouts select the instances behind.
      if (revision && record.metadata.labels?.[LABELS.planRevision] !== revision)
        await patchRecord(
          clusters.master,
          SFSERVICEINSTANCE,
          record.metadata.namespace!,
          record.metadata.name,
          {
            metadata: { labels: { [LABELS.planRevision]: revision } },
          },
        );
      return applied.length;
    },

    /**
     * Renders the `status` template and reads what it says of `operation`. For a bind that
     * succeeded, the response (credentials) goes straight into a Secret owned by the binding, so it
     * never leaves this activity. For deprovision and unbind, the operation has also succeeded only
     * once no applied object remains.
     */
    async checkStatus(target: Target, operation: OperationType): Promise<StatusReport> {
      const loaded = await load(target);
      const template = findTemplate(loaded.plan, 'status');
      if (!template)
        throw terminal(`plan ${loaded.plan.spec.name} has no status template`, FAILURE_TYPES.plan);
      const data = await templateData(loaded, 'status');
      const values = await render('status', loaded.plan, () =>
        renderer.renderValues(template, 'status', data),
      );
      const section = readStatusSection(values, operation);
      const { description, dashboardUrl } = section;
      let state = section.state;
      // A provision or update is not settled while the operator has not seen what was applied.
      if ((operation === 'provision' || operation === 'update') && state !== 'in progress') {
        const sourceKeys = Object.keys(data).filter((key) => !RECORD_KEYS.has(key));
        const behind = unobservedSource(data as Record<string, unknown>, sourceKeys);
        if (behind)
          return {
            state: 'in progress',
            description: `waiting for the operator to observe the change of ${behind}`,
          };
      }
      if ((operation === 'deprovision' || operation === 'unbind') && state === 'succeeded') {
        if ((await remainingResources(loaded)).length > 0) state = 'in progress';
      }
      if (operation === 'bind' && state === 'succeeded' && loaded.binding) {
        const secret = bindingSecretName(loaded.binding.metadata.name);
        await writeResponse(loaded.binding, secret, section.response);
        return { state, ...(description ? { description } : {}), responseSecret: secret };
      }
      return { state, ...(description ? { description } : {}), ...(dashboardUrl ? { dashboardUrl } : {}) };
    },

    /**
     * Deletes what was applied for the target and returns how many objects remain. A binding
     * deletes only the objects it created, and gives up its fields in the instance's objects.
     */
    async deleteResources(target: Target): Promise<number> {
      const loaded = await load(target);
      const { binding, cluster } = loaded;
      if (binding) {
        const manager = bindingFieldManager(binding.metadata.name);
        const shared = instanceResourcesOf(
          binding.status?.resources ?? [],
          loaded.instance.status?.resources ?? [],
        );
        for (const ref of shared) {
          await kubeCall(
            `releasing the fields of binding ${binding.spec.id} in ${describe(ref, cluster.id)}`,
            () => releaseFields(cluster, ref, manager),
            sisterId(cluster),
          );
        }
      }
      for (const ref of await remainingResources(loaded)) {
        await kubeCall(
          `deleting ${describe(ref, cluster.id)}`,
          () => deleteObject(cluster, ref),
          sisterId(cluster),
        );
      }
      return (await remainingResources(loaded)).length;
    },
  };
}
