/**
 * The operator's resources of an instance or binding: fetch the plan's `sources`, render the
 * action's template over them and apply what it describes (server-side apply with our field
 * manager, owned by the record, every object recorded in its status, objects no longer rendered
 * pruned), read the `status` template, and delete what was applied.
 */
import type { ClusterClient } from '../kube/clients.js';
import { getRecord, patchRecordStatus } from '../kube/custom-objects.js';
import {
  applyObject,
  deleteObject,
  FIELD_MANAGER,
  readObject,
  refOf,
  releaseFields,
} from '../kube/objects.js';
import { LABELS, bindingSecretName, labelValue } from '../resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type AppliedResource,
  type KubeObject,
  type OwnerReference,
  type SFPlan,
  type SFService,
  type SFServiceBinding,
  type SFServiceInstance,
  type TemplateAction,
} from '../resources/types.js';
import { findTemplate, type RenderData } from '../templates/index.js';
import type { OperationState, OperationType, StatusReport, Target } from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { bindingResponseProblem } from '../osb/responses.js';
import { FAILURE_TYPES, kubeFailure, retryable, terminal } from './failures.js';

interface Loaded {
  readonly cluster: ClusterClient;
  readonly instance: SFServiceInstance;
  readonly binding?: SFServiceBinding;
  readonly plan: SFPlan;
  readonly service: SFService;
}

/** Top-level template keys that sources may not shadow. */
const RESERVED = new Set(['instance', 'binding', 'plan', 'service']);

const sameRef = (a: AppliedResource, b: AppliedResource) =>
  a.apiVersion === b.apiVersion &&
  a.kind === b.kind &&
  a.name === b.name &&
  (a.namespace ?? '') === (b.namespace ?? '');

/**
 * Each binding writes as its own field manager, so what a bind adds to the instance's objects (a
 * user in the database resource) belongs to the binding alone: an update of the instance keeps it,
 * and the unbind can give it up without touching what the instance owns.
 */
const bindingFieldManager = (bindingName: string) => `${FIELD_MANAGER}/binding/${bindingName}`;

const describe = (obj: AppliedResource, clusterId: string) =>
  `${obj.kind} ${obj.namespace ? `${obj.namespace}/` : ''}${obj.name} in cluster ${clusterId}`;

/** Kubernetes bookkeeping that only makes template data noisy. */
function forTemplate(obj: KubeObject): KubeObject {
  const { managedFields: _managed, ...metadata } = obj.metadata as KubeObject['metadata'] & {
    managedFields?: unknown;
  };
  return { ...obj, metadata };
}

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

export function resourceActivities({ clusters, catalog, renderer }: ActivityDeps) {
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
    const cluster = await clusters.get(instance.spec.clusterId ?? ref.clusterId ?? '1');
    return { cluster, instance, plan, service, ...(binding ? { binding } : {}) };
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
    let sources: unknown;
    try {
      sources = await renderer.renderValues(sourcesTemplate, 'sources', base);
    } catch (err) {
      throw templateFailure(err, `sources (for ${action})`, loaded.plan);
    }
    const data: Record<string, unknown> = { ...base };
    if (sources && typeof sources === 'object') {
      for (const [key, ref] of Object.entries(sources as Record<string, unknown>)) {
        if (RESERVED.has(key) || !ref || typeof ref !== 'object') continue;
        const { apiVersion, kind, name, namespace } = ref as Record<string, unknown>;
        if (typeof apiVersion !== 'string' || typeof kind !== 'string' || typeof name !== 'string') continue;
        const source: AppliedResource = {
          apiVersion,
          kind,
          name,
          namespace:
            typeof namespace === 'string' && namespace ? namespace : loaded.instance.metadata.namespace!,
        };
        try {
          const obj = await readObject(loaded.cluster, source);
          if (obj) Object.defineProperty(data, key, { value: forTemplate(obj), enumerable: true });
        } catch (err) {
          throw kubeFailure(err, `reading source ${key} (${describe(source, loaded.cluster.id)})`);
        }
      }
    }
    return data as RenderData;
  }

  function ownerOf(record: KubeObject): OwnerReference {
    return {
      apiVersion: record.apiVersion,
      kind: record.kind,
      name: record.metadata.name,
      uid: record.metadata.uid!,
    };
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
      let objects: KubeObject[];
      try {
        objects = await renderer.renderObjects(template, action, data);
      } catch (err) {
        throw templateFailure(err, action, loaded.plan);
      }
      const namespace = loaded.instance.metadata.namespace!;
      const record = loaded.binding ?? loaded.instance;
      const instanceResources = loaded.instance.status?.resources ?? [];
      const applied: AppliedResource[] = [];
      for (const obj of objects) {
        const ns = obj.metadata?.namespace || namespace;
        const ref: AppliedResource = { ...refOf({ ...obj, metadata: { ...obj.metadata, namespace: ns } }) };
        // A binding changes objects of its instance (a user in the database resource): those stay
        // owned by the instance, so deleting the binding never deletes them.
        const ownedByInstance =
          loaded.binding !== undefined && instanceResources.some((r) => sameRef(r, ref));
        const owners =
          ns === namespace && !ownedByInstance && loaded.cluster.id === '1'
            ? [
                ...(obj.metadata?.ownerReferences ?? []).filter((o) => o.uid !== record.metadata.uid),
                ownerOf(record),
              ]
            : obj.metadata?.ownerReferences;
        const labels = {
          ...obj.metadata?.labels,
          [LABELS.instanceId]: labelValue(loaded.instance.spec.instanceId ?? target.instance.instanceId),
          ...(target.binding && !ownedByInstance
            ? { [LABELS.bindingId]: labelValue(target.binding.bindingId) }
            : {}),
        };
        try {
          await applyObject(
            loaded.cluster,
            {
              ...obj,
              metadata: {
                ...obj.metadata,
                namespace: ns,
                labels,
                ...(owners?.length ? { ownerReferences: owners } : {}),
              },
            },
            loaded.binding ? bindingFieldManager(loaded.binding.metadata.name) : FIELD_MANAGER,
          );
        } catch (err) {
          throw kubeFailure(err, `applying ${describe(ref, loaded.cluster.id)}`);
        }
        applied.push(ref);
      }
      const previous = record.status?.resources ?? [];
      if (!loaded.binding) {
        for (const stale of previous.filter((p) => !applied.some((a) => sameRef(a, p)))) {
          try {
            await deleteObject(loaded.cluster, stale);
          } catch (err) {
            throw kubeFailure(err, `pruning ${describe(stale, loaded.cluster.id)}`);
          }
        }
      }
      const resources = loaded.binding
        ? [...previous.filter((p) => !applied.some((a) => sameRef(a, p))), ...applied]
        : applied;
      const kind = loaded.binding ? SFSERVICEBINDING : SFSERVICEINSTANCE;
      await patchRecordStatus(clusters.master, kind, record.metadata.namespace!, record.metadata.name, {
        resources,
      });
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
      let values: unknown;
      try {
        values = await renderer.renderValues(template, 'status', data);
      } catch (err) {
        throw templateFailure(err, 'status', loaded.plan);
      }
      const sections = (values && typeof values === 'object' ? values : {}) as Record<string, unknown>;
      const key = operation === 'update' && !sections.update ? 'provision' : operation;
      const section = (sections[key] ?? {}) as Record<string, unknown>;
      const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);
      const declared = text(section.state);
      // Without a declared state, deletions succeed once their objects are gone; everything else waits.
      const gone = operation === 'deprovision' || operation === 'unbind';
      let state: OperationState =
        declared === 'succeeded' || declared === 'failed'
          ? declared
          : declared || !gone
            ? 'in progress'
            : 'succeeded';
      const description = text(section.error) ?? text(section.description);
      const dashboardUrl = text(section.dashboardUrl);

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
      if (loaded.binding) {
        const instanceResources = loaded.instance.status?.resources ?? [];
        const manager = bindingFieldManager(loaded.binding.metadata.name);
        for (const ref of (loaded.binding.status?.resources ?? []).filter((r) =>
          instanceResources.some((i) => sameRef(i, r)),
        )) {
          try {
            await releaseFields(loaded.cluster, ref, manager);
          } catch (err) {
            throw kubeFailure(
              err,
              `releasing the fields of binding ${loaded.binding.spec.id} in ${describe(ref, loaded.cluster.id)}`,
            );
          }
        }
      }
      const remaining = await remainingResources(loaded);
      for (const ref of remaining) {
        try {
          await deleteObject(loaded.cluster, ref);
        } catch (err) {
          throw kubeFailure(err, `deleting ${describe(ref, loaded.cluster.id)}`);
        }
      }
      return (await remainingResources(loaded)).length;
    },
  };

  /** Applied objects of the target that still exist. */
  async function remainingResources(loaded: Loaded): Promise<AppliedResource[]> {
    const instanceResources = loaded.instance.status?.resources ?? [];
    const mine = loaded.binding
      ? (loaded.binding.status?.resources ?? []).filter((r) => !instanceResources.some((i) => sameRef(i, r)))
      : instanceResources;
    const present: AppliedResource[] = [];
    for (const ref of mine) {
      try {
        if (await readObject(loaded.cluster, ref)) present.push(ref);
      } catch (err) {
        throw kubeFailure(err, `reading ${describe(ref, loaded.cluster.id)}`);
      }
    }
    return present;
  }

  async function writeResponse(binding: SFServiceBinding, name: string, response: unknown): Promise<void> {
    let parsed: unknown = response;
    if (typeof response === 'string') {
      try {
        parsed = response.trim() ? JSON.parse(response) : {};
      } catch {
        throw terminal(
          'The status template rendered a bind response that is not JSON; check the plan’s status template',
          FAILURE_TYPES.template,
        );
      }
    }
    const problem = bindingResponseProblem(parsed ?? {});
    if (problem) {
      throw terminal(
        `The bind response the status template rendered ${problem}; check the plan’s status template`,
        FAILURE_TYPES.template,
      );
    }
    const body = JSON.stringify(parsed ?? {});
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name,
        namespace: binding.metadata.namespace!,
        labels: { [LABELS.bindingId]: labelValue(binding.spec.id) },
        ownerReferences: [
          {
            apiVersion: binding.apiVersion,
            kind: binding.kind,
            name: binding.metadata.name,
            uid: binding.metadata.uid!,
          },
        ],
      },
      data: { response: Buffer.from(body).toString('base64') },
    };
    try {
      await applyObject(clusters.master, secret as unknown as KubeObject);
    } catch (err) {
      throw kubeFailure(err, `writing the response of binding ${binding.spec.id}`);
    }
  }
}
