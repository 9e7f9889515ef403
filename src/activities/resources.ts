/**
 * The operator's resources of an instance or binding: fetch the plan's `sources`, render the
 * action's template over them and apply what it describes (server-side apply with our field
 * manager, owned by the record, every object recorded in its status), prune the objects no longer
 * rendered once an update succeeded, read the `status` template, and delete what was applied. What to apply, prune and
 * delete is decided by desired-objects.ts, what the templates' values say by templates/values.ts;
 * these activities do the reads and writes.
 */
import { Context } from '@temporalio/activity';
import type { ClusterClient } from '../kube/clients.js';
import { clusterCapabilities } from '../kube/discovery.js';
import { statusCodeOf } from '../kube/errors.js';
import { applyObject, deleteObject, mergePatchObject, readObject, releaseFields } from '../kube/objects.js';
import { bindAdditionsRemoval, bindingsOwnPart } from '../resources/bind-additions.js';
import { seenSource } from '../resources/source-changes.js';
import { isCustomAction, type CustomAction } from '../resources/actions.js';
import {
  FIELD_MANAGER,
  ANNOTATIONS,
  LABELS,
  actionFieldManager,
  bindingFieldManager,
  bindingSecretName,
  planRevision,
} from '../resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type AppliedResource,
  type KubeObject,
  type ReferencedObject,
  type SFPlan,
  type SFService,
  type SFServiceBinding,
  type SFServiceInstance,
  type PlanTemplate,
  type TemplateAction,
} from '../resources/types.js';
import {
  bindingVersions,
  generatedTemplateData,
  isGeneratedSecret,
  recordedAfterGeneration,
  unrecorded,
} from '../resources/sfsecret.js';
import { findTemplate, type RenderData } from '../templates/index.js';
import type { ActionRun, OperationName, StatusReport, Target } from '../workflows/messages.js';
import type { ActivityDeps, RenderContext, WaitingWord } from './deps.js';
import {
  desiredObject,
  instanceResourcesOf,
  namespaceOf,
  namespaceReach,
  namespaceRefusal,
  type DesiredObject,
  ownResourcesOf,
  afterPruning,
  recordedResources,
  unbindOwnResources,
  sameResource,
  staleResources,
} from './desired-objects.js';
import { expectedRetry, FAILURE_TYPES, kubeFailure, retryable, terminal } from './failures.js';
import {
  declaredSpecs,
  ensureGeneratedSecrets,
  splitGenerated,
  type DeclaredSecret,
  type SecretPlace,
} from './secret-versions.js';
import { bindingCopy, clusterFailure, instanceCopy } from './placement.js';
import { recordsOnMaster } from './master-records.js';
import { keepingWrites, keptOrRead } from './run-records.js';
import { resolveReferences, type ResolvingFor } from './references.js';
import {
  bindResponseText,
  forTemplate,
  hasStatusSection,
  readStatusSection,
  sourceReferences,
  unobservedSource,
  withSources,
} from '../templates/values.js';

/**
 * What template data holds besides the sources: the records themselves, a custom action's run, and
 * the names of the generated secrets' current Secrets.
 */
const RECORD_KEYS = new Set(['instance', 'plan', 'service', 'binding', 'action', 'generated']);

/** Hears each source as a status check read it (undefined: not there). */
type SourceRead = (source: AppliedResource, object: KubeObject | undefined) => void;

/** Hears what an apply applies: the objects before it applies them, then each as the apiserver answered. */
interface ApplyWatching {
  beforeApply(cluster: ClusterClient, objects: AppliedResource[]): Promise<void>;
  applied(ref: AppliedResource, object: KubeObject): void;
}

/** The records an operation works on, and a client of the instance's cluster. */
interface Loaded {
  readonly cluster: ClusterClient;
  readonly instance: SFServiceInstance;
  readonly binding?: SFServiceBinding;
  readonly plan: SFPlan;
  readonly service: SFService;
}

export const describe = (obj: AppliedResource, clusterId: string) =>
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
export async function kubeCall<T>(what: string, call: () => Promise<T>, sisterId?: string): Promise<T> {
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

/**
 * Reading and rendering an instance's or binding's templates: what applying them and a dry run of
 * a plan change (dry-run.ts) share, so that a dry run renders exactly what an update would apply.
 */
export function resourceRendering({ clusters, catalog, renderer, records: given, runRecords }: ActivityDeps) {
  const records = given ?? keepingWrites(recordsOnMaster(clusters.master), runRecords);
  /** The id of a sister cluster, for waiting on it; undefined for the master. */
  const sisterId = (cluster: ClusterClient) => (cluster === clusters.master ? undefined : cluster.id);

  /**
   * The records of the target, its plan and service, and a client of its cluster (the one the
   * target names, else the one the instance's record names). `override`
   * stands for the records as read (a dry run's plan with its new spec, the instance as the
   * update would record it).
   */
  async function load(
    target: Target,
    override?: (loaded: { instance: SFServiceInstance }) => { instance?: SFServiceInstance; plan?: SFPlan },
  ): Promise<Loaded> {
    const { instance: ref } = target;
    const read = await keptOrRead(runRecords, SFSERVICEINSTANCE, ref.namespace, ref.name, () =>
      records.instance(ref.namespace, ref.name),
    );
    if (!read) throw retryable(`instance ${ref.instanceId} has no record in ${ref.namespace}`);
    const replaced = override?.({ instance: read });
    const instance = replaced?.instance ?? read;
    const plan = replaced?.plan ?? catalog.plan(instance.spec.planId);
    if (!plan) throw terminal(`plan ${instance.spec.planId} is not in the catalog`, FAILURE_TYPES.plan);
    const service = catalog.service(plan.spec.serviceId);
    if (!service) throw terminal(`service ${plan.spec.serviceId} is not in the catalog`, FAILURE_TYPES.plan);
    let binding: SFServiceBinding | undefined;
    if (target.binding) {
      const { namespace, name } = target.binding;
      binding = await keptOrRead(runRecords, SFSERVICEBINDING, namespace, name, () =>
        records.binding(namespace, name),
      );
      if (!binding) throw retryable(`binding ${target.binding.bindingId} has no record`);
    }
    const clusterId = target.cluster ?? instance.spec.clusterId ?? ref.clusterId ?? clusters.masterId;
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
  async function copyOnCluster(loaded: Loaded, dryRun = false): Promise<KubeObject | undefined> {
    const { cluster, instance, binding } = loaded;
    if (cluster === clusters.master) return undefined;
    const copy = await kubeCall(
      `copying instance ${instance.metadata.name} to cluster ${cluster.id}`,
      () => applyObject(cluster, instanceCopy(instance, cluster.id), FIELD_MANAGER, { dryRun }),
      sisterId(cluster),
    );
    if (!binding) return copy;
    return kubeCall(
      `copying binding ${binding.metadata.name} to cluster ${cluster.id}`,
      () => applyObject(cluster, bindingCopy(binding, copy), FIELD_MANAGER, { dryRun }),
      sisterId(cluster),
    );
  }

  /**
   * The data templates see: the records, the plan and service, the names of the generated
   * secrets' current Secrets (`generated.<name>.secretName`) and the fetched sources; while a
   * custom action runs, its run as `action` (name, id, parameters) too. `beforeRead` hears which
   * sources are about to be read.
   */
  async function templateData(
    loaded: Loaded,
    action: TemplateAction,
    run?: ActionRun,
    beforeRead?: (sources: AppliedResource[]) => Promise<SourceRead | void>,
  ): Promise<RenderData> {
    const base: RenderData = {
      instance: forTemplate(loaded.instance),
      plan: forTemplate(loaded.plan),
      service: forTemplate(loaded.service),
      ...(loaded.binding ? { binding: forTemplate(loaded.binding) } : {}),
      ...(run ? { action: run } : {}),
      generated: generatedTemplateData(loaded.instance.status?.generatedSecrets),
    };
    const sourcesTemplate = findTemplate(loaded.plan, 'sources');
    if (!sourcesTemplate) return base;
    const sources = await render(`sources (for ${action})`, loaded.plan, () =>
      renderer.renderValues(sourcesTemplate, 'sources', base),
    );
    const references = sourceReferences(sources, loaded.instance.metadata.namespace!);
    for (const [, source] of references)
      checkNamespace(
        loaded,
        source.namespace!,
        `the sources template of plan ${loaded.plan.spec.name} names ${source.kind} ${source.name}`,
      );
    const read = await beforeRead?.(references.map(([, source]) => source));
    const fetched: [string, KubeObject | undefined][] = [];
    for (const [key, source] of references) {
      const obj = await kubeCall(
        `reading source ${key} (${describe(source, loaded.cluster.id)})`,
        () => readObject(loaded.cluster, source),
        sisterId(loaded.cluster),
      );
      read?.(source, obj ?? undefined);
      fetched.push([key, obj ?? undefined]);
    }
    return withSources(base, fetched) as RenderData;
  }

  /** A helm chart sees the capabilities of the cluster it is applied to, as `helm install` shows them. */
  async function renderContext(loaded: Loaded, template: PlanTemplate): Promise<RenderContext | undefined> {
    if (String(template.type).toLowerCase() !== 'helm') return undefined;
    const capabilities = await kubeCall(
      `reading the API versions of cluster ${loaded.cluster.id} for a helm chart`,
      () => clusterCapabilities(loaded.cluster),
      sisterId(loaded.cluster),
    );
    return { capabilities };
  }

  /**
   * Renders the action's template over the target's data and gives the objects to apply, each as
   * desired-objects.ts makes it (namespace, labels, owner); undefined when the plan has no such
   * template. `copyOf` gives the record's copy on a sister cluster (copyOnCluster), once the
   * template rendered.
   */
  async function desiredObjects(
    loaded: Loaded,
    target: Target,
    action: 'provision' | 'bind' | 'unbind',
    copyOf: () => Promise<KubeObject | undefined>,
  ): Promise<DesiredObject[] | undefined> {
    const template = findTemplate(loaded.plan, action);
    if (!template) return undefined;
    const data = await templateData(loaded, action);
    const context = await renderContext(loaded, template);
    let objects = await render(action, loaded.plan, () =>
      renderer.renderObjects(template, action, data, context),
    );
    // SFSecrets the record does not keep yet are named by their version 1, made before anything is applied.
    const recorded = loaded.instance.status?.generatedSecrets;
    const fresh = unrecorded(recorded, declaredSpecs(objects));
    if (fresh.length > 0) {
      const named = { ...data, generated: generatedTemplateData(recorded, fresh) } as RenderData;
      objects = await render(action, loaded.plan, () =>
        renderer.renderObjects(template, action, named, context),
      );
    }
    if (target.binding && (action === 'bind' || action === 'unbind'))
      objects = await bindingsOwnParts(loaded, action, objects, data, context);
    // Every object is checked before any is applied (or a copy made): a refused one leaves nothing done.
    for (const rendered of objects)
      checkNamespace(
        loaded,
        namespaceOf(rendered, loaded.instance.metadata.namespace!),
        `the ${action} template of plan ${loaded.plan.spec.name} renders ${rendered.kind} ${rendered.metadata?.name}`,
      );
    const copy = await copyOf();
    const { instance, binding, cluster } = loaded;
    const record = binding ?? instance;
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
    return desired;
  }

  /**
   * A binding's bind or unbind objects, those of its instance (listed in the instance's
   * `status.resources`: a user in the operator's database resource) cut to the binding's own part
   * of them (resources/bind-additions.ts `bindingsOwnPart`): what this template renders and the
   * other one of the two (the unbind's for a bind, the bind's for an unbind) renders not, or
   * otherwise, over the same data. So the binding's field manager owns what the binding added and
   * nothing of the instance's or the other bindings', and gives it up at its unbind. When the plan
   * has no other template, or it does not render, the objects as rendered.
   */
  async function bindingsOwnParts(
    loaded: Loaded,
    action: 'bind' | 'unbind',
    objects: KubeObject[],
    data: RenderData,
    context: RenderContext | undefined,
  ): Promise<KubeObject[]> {
    const namespace = loaded.instance.metadata.namespace!;
    const refOf = (o: KubeObject): AppliedResource => ({
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.metadata?.name,
      namespace: namespaceOf(o, namespace),
    });
    const instanceResources = loaded.instance.status?.resources ?? [];
    const isShared = (o: KubeObject) => instanceResources.some((r) => sameResource(r, refOf(o)));
    const other = action === 'bind' ? 'unbind' : 'bind';
    const template = findTemplate(loaded.plan, other);
    if (!template || !objects.some(isShared)) return objects;
    let counterparts: KubeObject[];
    try {
      counterparts = await renderer.renderObjects(template, other, data, context);
    } catch {
      return objects;
    }
    return objects.map((o) =>
      isShared(o)
        ? bindingsOwnPart(
            o,
            counterparts.find((c) => sameResource(refOf(c), refOf(o))),
          )
        : o,
    );
  }

  /** Which namespaces the target's templates may name (desired-objects.ts). */
  const reachOf = (loaded: Loaded) =>
    namespaceReach(loaded.instance.metadata.namespace!, clusters.namespace, loaded.service);

  /**
   * Refuses what a template names (`what`: "the provision template of plan p renders ConfigMap c")
   * in a namespace the instance may not reach, saying how the service's owner allows one.
   */
  function checkNamespace(loaded: Loaded, namespace: string, what: string): void {
    const refused = namespaceRefusal(namespace, reachOf(loaded));
    if (refused) throw terminal(`${what} in ${refused}`, FAILURE_TYPES.template);
  }

  /** Where the instance's generated Secrets are: its namespace on its cluster. */
  function secretPlace(loaded: Loaded): SecretPlace {
    return {
      cluster: loaded.cluster,
      namespace: loaded.instance.metadata.namespace!,
      call: (what, call) => kubeCall(what, call, sisterId(loaded.cluster)),
    };
  }

  /** How the references in what `action` applies are read: on the instance's cluster, for its namespace. */
  const resolvingFor = (loaded: Loaded, action: TemplateAction): ResolvingFor => ({
    cluster: loaded.cluster,
    namespace: loaded.instance.metadata.namespace!,
    reach: reachOf(loaded),
    planName: loaded.plan.spec.name,
    action,
    call: (what, run) => kubeCall(what, run, sisterId(loaded.cluster)),
  });

  return {
    records,
    sisterId,
    load,
    copyOnCluster,
    templateData,
    desiredObjects,
    checkNamespace,
    resolvingFor,
    secretPlace,
  };
}

/** Whether an applied object and a referenced one are the same object. */
const sameObject = (a: AppliedResource, r: ReferencedObject) =>
  a.apiVersion === r.apiVersion &&
  a.kind === r.kind &&
  a.name === r.name &&
  (a.namespace ?? '') === r.namespace;

export function resourceActivities(deps: ActivityDeps) {
  const { clusters } = deps;
  const {
    records,
    sisterId,
    load,
    copyOnCluster,
    templateData,
    desiredObjects,
    checkNamespace,
    resolvingFor,
    secretPlace,
  } = resourceRendering(deps);
  const { renderer } = deps;

  /**
   * Generates the provision template's SFSecrets the instance does not have yet (version 1) and
   * records them; those it has keep their values. Only names reach the record.
   */
  async function generateSecrets(loaded: Loaded, declared: readonly DeclaredSecret[]): Promise<void> {
    const { instance } = loaded;
    const recorded = instance.status?.generatedSecrets ?? [];
    const current = recordedAfterGeneration(
      recorded,
      declared.map((d) => d.spec),
      new Date().toISOString(),
    );
    await ensureGeneratedSecrets(secretPlace(loaded), declared, current);
    // On the condition that the record is still as read: a 409 is retried from a fresh read.
    if (current.length !== recorded.length)
      await kubeCall(`recording the generated secrets of instance ${instance.metadata.name}`, () =>
        records.write({
          kind: 'status',
          record: 'instance',
          namespace: instance.metadata.namespace!,
          name: instance.metadata.name,
          status: { generatedSecrets: current },
          ...(instance.metadata.resourceVersion
            ? { resourceVersion: instance.metadata.resourceVersion }
            : {}),
        }),
      );
  }

  /** Applied objects of the target that still exist. */
  async function remainingResources(loaded: Loaded): Promise<AppliedResource[]> {
    const instanceResources = loaded.instance.status?.resources ?? [];
    const mine = loaded.binding
      ? ownResourcesOf(loaded.binding.status?.resources ?? [], instanceResources)
      : instanceResources;
    return (await presentOf(loaded, mine)).map(({ ref }) => ref);
  }

  /** Those of `refs` that exist on the target's cluster, each with the object as read. */
  async function presentOf(
    loaded: Loaded,
    refs: readonly AppliedResource[],
  ): Promise<{ ref: AppliedResource; obj: KubeObject }[]> {
    const present: { ref: AppliedResource; obj: KubeObject }[] = [];
    for (const ref of refs) {
      const obj = await kubeCall(
        `reading ${describe(ref, loaded.cluster.id)}`,
        () => readObject(loaded.cluster, ref),
        sisterId(loaded.cluster),
      );
      if (obj) present.push({ ref, obj });
    }
    return present;
  }

  /** The objects the unbind applied of its own (unbindOwnResources) that are still there. */
  async function presentUnbindObjects(
    loaded: Loaded,
  ): Promise<{ listed: number; present: { ref: AppliedResource; deleting: boolean }[] }> {
    const listed = loaded.binding?.status?.unbindResources ?? [];
    const present = (await presentOf(loaded, listed)).map(({ ref, obj }) => ({
      ref,
      deleting: Boolean(obj.metadata?.deletionTimestamp),
    }));
    return { listed: listed.length, present };
  }

  /** Deletes the unbind's own objects once the status template said it succeeded. */
  async function deleteUnbindObjects(
    loaded: Loaded,
    present: readonly { ref: AppliedResource; deleting: boolean }[],
  ): Promise<void> {
    for (const { ref, deleting } of present) {
      if (deleting) continue;
      await kubeCall(
        `deleting ${describe(ref, loaded.cluster.id)}`,
        () => deleteObject(loaded.cluster, ref),
        sisterId(loaded.cluster),
      );
    }
  }

  /** Writes a bind's response into the Secret `name`, owned by the binding's record. */
  async function writeResponse(binding: SFServiceBinding, name: string, response: unknown): Promise<void> {
    const text = bindResponseText(response);
    if ('error' in text) throw terminal(text.error, FAILURE_TYPES.template);
    await kubeCall(`writing the response of binding ${binding.spec.id}`, () =>
      records.writeResponse(binding, name, text.json),
    );
  }

  /**
   * Applies the objects a custom action's template rendered, on the instance's cluster, owned by
   * the instance's record (its copy on a sister), with the action's own field manager.
   */
  async function applyAction(
    loaded: Loaded,
    target: Target,
    action: CustomAction,
    objects: readonly KubeObject[],
  ): Promise<number> {
    const { instance, cluster } = loaded;
    const generated = objects.find(isGeneratedSecret);
    if (generated)
      throw terminal(
        `the ${action} template of plan ${loaded.plan.spec.name} renders SFSecret ${generated.metadata?.name}: generated secrets belong in the provision template`,
        FAILURE_TYPES.template,
      );
    for (const rendered of objects)
      checkNamespace(
        loaded,
        namespaceOf(rendered, instance.metadata.namespace!),
        `the ${action} template of plan ${loaded.plan.spec.name} renders ${rendered.kind} ${rendered.metadata?.name}`,
      );
    const copy = await copyOnCluster(loaded);
    const desired = objects.map((rendered) =>
      desiredObject(rendered, {
        namespace: instance.metadata.namespace!,
        clusterId: cluster.id,
        masterId: clusters.master.id,
        instanceId: instance.spec.instanceId ?? target.instance.instanceId,
        record: instance,
        ...(copy ? { copy } : {}),
      }),
    );
    const resolved = await resolveReferences(resolvingFor(loaded, action), desired);
    for (const { object, ref } of resolved.desired) {
      await resolved.applying(() =>
        kubeCall(
          `applying ${describe(ref, cluster.id)} for ${action}`,
          () => applyObject(cluster, object, actionFieldManager(action)),
          sisterId(cluster),
        ),
      );
    }
    return objects.length;
  }

  /** What an action without a template applies: nothing, unless a provision or custom action needs one. */
  function withoutTemplate(loaded: Loaded, action: 'provision' | 'bind' | 'unbind' | CustomAction): number {
    if (action === 'provision' || isCustomAction(action))
      throw terminal(`plan ${loaded.plan.spec.name} has no ${action} template`, FAILURE_TYPES.plan);
    return 0;
  }

  /** Renders a custom action's template for its run, and applies what it renders. */
  async function renderAndApplyAction(
    loaded: Loaded,
    target: Target,
    action: CustomAction,
    template: PlanTemplate,
    run: ActionRun | undefined,
  ): Promise<number> {
    const data = await templateData(loaded, action, run);
    const objects = await render(action, loaded.plan, () => renderer.renderObjects(template, action, data));
    return applyAction(loaded, target, action, objects);
  }

  /**
   * The objects the action's template renders, without its SFSecrets; those (a provision's alone)
   * are generated first, before anything that names them is applied.
   */
  async function desiredWithSecrets(
    loaded: Loaded,
    target: Target,
    action: 'provision' | 'bind' | 'unbind',
  ): Promise<readonly DesiredObject[]> {
    const rendered = (await desiredObjects(loaded, target, action, () => copyOnCluster(loaded))) ?? [];
    const { secrets, objects } = splitGenerated(rendered, action);
    if (secrets.length > 0 && action !== 'provision')
      throw terminal(
        `the ${action} template of plan ${loaded.plan.spec.name} renders SFSecret ${secrets[0]!.spec.name}: generated secrets belong in the provision template`,
        FAILURE_TYPES.template,
      );
    if (secrets.length > 0) await generateSecrets(loaded, secrets);
    return objects;
  }

  /** Applies the resolved objects on the target's cluster, as the instance or the binding; returns what was applied. */
  async function applyResolved(
    loaded: Loaded,
    resolved: Awaited<ReturnType<typeof resolveReferences>>,
    watching?: ApplyWatching,
  ): Promise<AppliedResource[]> {
    const { binding, cluster } = loaded;
    const fieldManager = binding ? bindingFieldManager(binding.metadata.name) : FIELD_MANAGER;
    await watching?.beforeApply(
      cluster,
      resolved.desired.map(({ ref }) => ref),
    );
    const applied: AppliedResource[] = [];
    for (const { object, ref } of resolved.desired) {
      const result = await resolved.applying(() =>
        kubeCall(
          `applying ${describe(ref, cluster.id)}`,
          () => applyObject(cluster, object, fieldManager),
          sisterId(cluster),
        ),
      );
      watching?.applied(ref, result);
      applied.push(ref);
    }
    return applied;
  }

  /**
   * Deletes the objects the instance's record lists as stale (its template no longer rendered them
   * when last applied), then lists them no more (pruneResources). Safe to run again: an object
   * already gone is done, and a record without stale objects has nothing to do.
   */
  async function pruneStale(target: Target): Promise<number> {
    const { instance, cluster } = await load(target);
    const stale = instance.status?.staleResources ?? [];
    if (stale.length === 0) return 0;
    for (const ref of stale) {
      await kubeCall(
        `pruning ${describe(ref, cluster.id)}`,
        () => deleteObject(cluster, ref),
        sisterId(cluster),
      );
    }
    await records.write({
      kind: 'status',
      record: 'instance',
      namespace: instance.metadata.namespace!,
      name: instance.metadata.name,
      status: { resources: afterPruning(instance.status?.resources ?? [], stale), staleResources: [] },
      ...(instance.metadata.resourceVersion ? { resourceVersion: instance.metadata.resourceVersion } : {}),
    });
    return stale.length;
  }

  /**
   * Records in the record's status what was applied and, for an instance, what its references
   * read and its plan revision; for a bind, the versions of the generated secrets it was made
   * with. Returns what the instance's references read (none for a binding).
   */
  async function recordApplied(
    loaded: Loaded,
    action: 'provision' | 'bind' | 'unbind',
    applied: readonly AppliedResource[],
    read: readonly ReferencedObject[],
  ): Promise<ReferencedObject[]> {
    const { instance, binding } = loaded;
    const record = binding ?? instance;
    const previous = record.status?.resources ?? [];
    const revision = binding ? undefined : planRevision(loaded.plan.spec);
    // What the instance's references read, but not its own objects: a change the operator makes
    // to one of those is no change of what the references read from outside.
    const referenced = binding ? [] : read.filter((r) => !applied.some((a) => sameObject(a, r)));
    // A binding keeps the versions of the generated secrets it was made with until it is gone.
    const versions =
      binding && action === 'bind' && !binding.status?.generatedSecrets
        ? bindingVersions(instance.status?.generatedSecrets)
        : [];
    // An unbind's own objects are listed apart: the bind's objects go at once, these once it is done.
    const unbindOwn =
      action === 'unbind' ? unbindOwnResources(applied, previous, instance.status?.resources ?? []) : [];
    const listed = applied.filter((ref) => !unbindOwn.some((own) => sameResource(own, ref)));
    await records.write({
      kind: 'status',
      record: binding ? 'binding' : 'instance',
      namespace: record.metadata.namespace!,
      name: record.metadata.name,
      status: {
        resources: recordedResources(previous, listed, binding !== undefined),
        ...(unbindOwn.length > 0 ? { unbindResources: unbindOwn } : {}),
        ...(binding ? {} : { staleResources: staleResources(previous, applied) }),
        ...(binding ? {} : { references: referenced }),
        ...(revision ? { planRevision: revision } : {}),
        ...(versions.length > 0 ? { generatedSecrets: versions } : {}),
      },
    });
    return referenced;
  }

  /** The revision the instance is now on, as a label too: rollouts select the instances behind. */
  async function labelPlanRevision(instance: SFServiceInstance, revision: string): Promise<void> {
    if (instance.metadata.labels?.[LABELS.planRevision] === revision) return;
    await records.write({
      kind: 'labels',
      namespace: instance.metadata.namespace!,
      name: instance.metadata.name,
      labels: { [LABELS.planRevision]: revision },
    });
  }

  /** Renders the action's template for the target and applies what it renders (applyTemplate). */
  async function applyTemplateOf(
    target: Target,
    action: 'provision' | 'bind' | 'unbind' | CustomAction,
    run?: ActionRun,
    watching?: ApplyWatching,
  ): Promise<number> {
    const loaded = await load(target);

    const template = findTemplate(loaded.plan, action);
    if (!template) return withoutTemplate(loaded, action);
    if (isCustomAction(action)) return renderAndApplyAction(loaded, target, action, template, run);
    const desired = await desiredWithSecrets(loaded, target, action);
    // Every reference of every object resolved before any is applied: all or nothing.
    const resolved = await resolveReferences(resolvingFor(loaded, action), desired);
    const applied = await applyResolved(loaded, resolved, watching);
    const referenced = await recordApplied(loaded, action, applied, resolved.referenced);
    if (!loaded.binding) {
      deps.followedReferences?.follow(
        loaded.instance.spec.instanceId ?? target.instance.instanceId,
        loaded.instance.spec.planId,
        loaded.cluster.id,
        referenced,
      );
      await labelPlanRevision(loaded.instance, planRevision(loaded.plan.spec));
    }
    return applied.length;
  }

  /**
   * Whether a deletion (a deprovision, an unbind) is done because its record is gone: records are
   * removed last, once the operator's resources are, so a step of the deletion that runs again
   * after that (its workflow task replayed) has nothing left to do.
   */
  async function deletionDone(target: Target, operation: 'deprovision' | 'unbind'): Promise<boolean> {
    if (operation === 'unbind' && target.binding) {
      const { namespace, name } = target.binding;
      return (await records.binding(namespace, name)) === undefined;
    }
    const { namespace, name } = target.instance;
    return (await records.instance(namespace, name)) === undefined;
  }

  /** Runs a step of a deletion; when it fails because the deletion is done, answers `done`. */
  async function unlessDeleted<T>(
    target: Target,
    operation: 'deprovision' | 'unbind',
    step: () => Promise<T>,
    done: T,
  ): Promise<T> {
    try {
      return await step();
    } catch (err) {
      if (await deletionDone(target, operation)) return done;
      throw err;
    }
  }

  /**
   * What the status template says of the target's operation; `beforeRead` hears which sources it
   * reads on which cluster, before it reads them.
   */
  async function statusOf(
    target: Target,
    operation: OperationName,
    run: ActionRun | undefined,
    beforeRead: (cluster: ClusterClient, sources: AppliedResource[]) => Promise<SourceRead | void>,
  ): Promise<StatusReport> {
    const loaded = await load(target);
    const template = findTemplate(loaded.plan, 'status');
    if (!template) throw terminal(`plan ${loaded.plan.spec.name} has no status template`, FAILURE_TYPES.plan);
    const data = await templateData(loaded, 'status', run, (sources) => beforeRead(loaded.cluster, sources));
    const values = await render('status', loaded.plan, () => renderer.renderValues(template, 'status', data));
    // A custom action has no default: a status template that says nothing of it never will.
    if (isCustomAction(operation) && !hasStatusSection(values, operation))
      throw terminal(
        `The status template of plan ${loaded.plan.spec.name} has no section ${operation}; add one with the action's state and description`,
        FAILURE_TYPES.plan,
      );
    const section = readStatusSection(values, operation);
    const { description, dashboardUrl } = section;
    let state = section.state;
    // A provision, update or custom action is not settled while the operator has not seen what was applied.
    if (
      (operation === 'provision' || operation === 'update' || isCustomAction(operation)) &&
      state !== 'in progress'
    ) {
      const sourceKeys = Object.keys(data).filter((key) => !RECORD_KEYS.has(key));
      const behind = unobservedSource(data as Record<string, unknown>, sourceKeys);
      if (behind)
        return {
          state: 'in progress',
          description: `waiting for the operator to observe the change of ${behind}`,
        };
    }
    // The unbind's own objects are deleted only once it succeeded: when they are gone, it is done.
    const unbindObjects = operation === 'unbind' ? await presentUnbindObjects(loaded) : undefined;
    if (unbindObjects && unbindObjects.listed > 0 && unbindObjects.present.length === 0) state = 'succeeded';
    if ((operation === 'deprovision' || operation === 'unbind') && state === 'succeeded') {
      if ((await remainingResources(loaded)).length > 0) state = 'in progress';
      else if (unbindObjects && unbindObjects.present.length > 0) {
        await deleteUnbindObjects(loaded, unbindObjects.present);
        return { state: 'in progress', description: 'Deleting the objects the unbind applied' };
      }
    }
    if (operation === 'bind' && state === 'succeeded' && loaded.binding) {
      const secret = bindingSecretName(loaded.binding.metadata.name);
      await writeResponse(loaded.binding, secret, section.response);
      return { state, ...(description ? { description } : {}), responseSecret: secret };
    }
    return {
      state,
      ...(description ? { description } : {}),
      ...(dashboardUrl ? { dashboardUrl } : {}),
      ...(section.instanceUsable !== undefined ? { instanceUsable: section.instanceUsable } : {}),
      ...(section.updateRepeatable !== undefined ? { updateRepeatable: section.updateRepeatable } : {}),
    };
  }

  /**
   * Applies the action's template, leaving word with the status wake-ups when an object it applied
   * is left for its operator to observe and the watches of its kinds stream: the word, undefined
   * when there is none to wait for.
   */
  async function applyWatching(
    target: Target,
    action: 'provision' | 'bind',
  ): Promise<{ readonly applied: number; readonly word?: WaitingWord }> {
    const wakeups = deps.statusWakeups;
    const run = wakeups && Context.current().info.workflowExecution;
    let word: WaitingWord | undefined;
    let behind = false;
    const watching: ApplyWatching = {
      async beforeApply(cluster, objects) {
        if (wakeups && run && objects.length > 0) word = await wakeups.expect(cluster, objects, run);
      },
      applied(ref, object) {
        const seen = seenSource(object);
        if (word?.seen(ref, seen) && seen?.unobservedGeneration !== undefined) behind = true;
      },
    };
    try {
      const applied = await applyTemplateOf(target, action, undefined, watching);
      if (behind && word?.heard === true) return { applied, word };
      word?.release();
      return { applied };
    } catch (err) {
      word?.release();
      throw err;
    }
  }

  return {
    /**
     * Renders the action's template (provision, bind, unbind) and applies every object it
     * describes; records them in the record's status. It deletes nothing: the objects an instance's
     * template no longer renders stay listed, and apart as stale, for {@link pruneResources} once
     * the operator reported the update done. Returns how many objects were applied.
     *
     * A custom action's template (`run` says which run) is applied the same way, on the instance's
     * cluster and owned by its record, with a field manager of the action's own, so that it
     * neither takes nor drops the fields the provision template wrote; what it applies is not
     * listed in `status.resources`, so an update does not prune it (its owner reference removes it
     * with the instance).
     */
    async applyTemplate(
      target: Target,
      action: 'provision' | 'bind' | 'unbind' | CustomAction,
      run?: ActionRun,
    ): Promise<number> {
      if (action === 'unbind')
        return unlessDeleted(target, 'unbind', () => applyTemplateOf(target, action), 0);
      return applyTemplateOf(target, action, run);
    },

    /**
     * Applies the bind template (or, for an update, the instance's) as {@link applyTemplate} does
     * and tells whether the first status check should wait for the operator: when an object it
     * applied is left for its operator to observe (its `metadata.generation` ahead of the
     * `status.observedGeneration` the operator reports) and the worker's watch of its kind
     * streams, word is left with the status wake-ups, and the operator's report that it observed
     * the change (or a deletion) wakes the operation. A check before that has no answer from the
     * operator to read.
     */
    async applyTemplateWatched(
      target: Target,
      action: 'provision' | 'bind',
    ): Promise<{ readonly applied: number; readonly operatorBehind: boolean }> {
      const { applied, word } = await applyWatching(target, action);
      return { applied, operatorBehind: word !== undefined };
    },

    /**
     * Applies as {@link applyTemplateWatched} does, then, when the operator has yet to observe what
     * was applied, waits here for its word, at most `waitMs` (a step's place is held meanwhile, so
     * the wait is short): when it comes, the status check that follows at once reads the
     * operator's answer, and the operation needs no wake-up of its own; when it has not come, the
     * word stays to wake the operation, as after {@link applyTemplateWatched}. Answers whether the
     * operator was behind and whether its word came.
     */
    async applyTemplateAwaited(
      target: Target,
      action: 'provision' | 'bind',
      waitMs: number,
    ): Promise<{ readonly applied: number; readonly operatorBehind: boolean; readonly heard: boolean }> {
      const { applied, word } = await applyWatching(target, action);
      if (!word) return { applied, operatorBehind: false, heard: false };
      try {
        const heard = await Promise.race([word.woken(waitMs), Context.current().cancelled]);
        return { applied, operatorBehind: true, heard };
      } catch (err) {
        word.release();
        throw err;
      }
    },

    /**
     * Renders the `status` template and reads what it says of `operation`. For a bind that
     * succeeded, the response (credentials) goes straight into a Secret owned by the binding, so it
     * never leaves this activity. For deprovision and unbind, the operation has also succeeded only
     * once no applied object remains.
     *
     * With status wake-ups (deps.statusWakeups), a check that says "in progress" leaves word of the
     * sources it read, so that the operator's next change to one of them wakes the operation.
     */
    async checkStatus(target: Target, operation: OperationName, run?: ActionRun): Promise<StatusReport> {
      const wakeups = deps.statusWakeups;
      let waiting: WaitingWord | undefined;
      const expect = async (
        cluster: ClusterClient,
        sources: AppliedResource[],
      ): Promise<SourceRead | void> => {
        const run = wakeups && Context.current().info.workflowExecution;
        if (!wakeups || !run || sources.length === 0) return;
        const word = await wakeups.expect(cluster, sources, run);
        waiting = word;
        return (source, object) => word.seen(source, seenSource(object));
      };
      const check = async () => {
        try {
          const report = await statusOf(target, operation, run, expect);
          if (report.state !== 'in progress') waiting?.release();
          return report;
        } catch (err) {
          waiting?.release();
          throw err;
        }
      };
      if (operation !== 'deprovision' && operation !== 'unbind') return check();
      return unlessDeleted(target, operation, check, { state: 'succeeded' });
    },

    /**
     * Deletes the objects the instance's template no longer rendered when last applied (its
     * record's `status.staleResources`), and lists them no more: an update's last step, once the
     * operator reported success, so an update that fails rolls back onto objects that are still
     * there. Returns how many were pruned.
     */
    async pruneResources(target: Target): Promise<number> {
      return pruneStale(target);
    },

    /**
     * Deletes what was applied for the target and returns how many objects remain. A binding
     * deletes only the objects it created, and gives up its fields in the instance's objects.
     *
     * With `unbindObjects`, for an unbind that failed: deletes the unbind's own objects instead and
     * lists them no more, so that the unbind run again applies them afresh rather than finding
     * them failed (a Job that failed stays failed). Done once they are gone; safe to run again.
     */
    async deleteResources(target: Target, options: { unbindObjects?: boolean } = {}): Promise<number> {
      return unlessDeleted(
        target,
        target.binding ? 'unbind' : 'deprovision',
        () => (options.unbindObjects ? deleteUnbindObjectsOf(target) : deleteResourcesOf(target)),
        0,
      );
    },
  };

  /**
   * For a binding adopted from Service Fabrik, what its bind added to the instance's objects
   * `shared`, which Service Fabrik's field manager owns with the rest of each object: the keys the
   * bind template renders in the object and the provision template does not
   * (resources/bind-additions.ts), as merge patches that take them out. None for a binding made
   * here, which owns its additions and gives them up with its field manager.
   */
  async function addedByAdoptedBind(
    loaded: Loaded,
    target: Target,
    shared: readonly AppliedResource[],
  ): Promise<{ ref: AppliedResource; removal: Record<string, unknown> }[]> {
    const { binding, ...instanceOnly } = loaded;
    if (!binding?.metadata.annotations?.[ANNOTATIONS.adoptedFromServiceFabrik] || shared.length === 0)
      return [];
    const none = async () => undefined;
    const bound = (await desiredObjects(loaded, target, 'bind', none)) ?? [];
    const { binding: _binding, ...instanceTarget } = target;
    const provisioned = (await desiredObjects(instanceOnly, instanceTarget, 'provision', none)) ?? [];
    const added: { ref: AppliedResource; removal: Record<string, unknown> }[] = [];
    for (const ref of shared) {
      const object = (among: readonly DesiredObject[]) => among.find((d) => sameResource(d.ref, ref))?.object;
      const bindObject = object(bound);
      const removal = bindObject && bindAdditionsRemoval(bindObject, object(provisioned));
      if (removal) added.push({ ref, removal });
    }
    return added;
  }

  /** Deletes the objects an unbind applied of its own, then lists them no more (deleteResources). */
  async function deleteUnbindObjectsOf(target: Target): Promise<number> {
    const loaded = await load(target);
    const { binding } = loaded;
    if (!binding?.status?.unbindResources?.length) return 0;
    const { present } = await presentUnbindObjects(loaded);
    if (present.length > 0) {
      await deleteUnbindObjects(loaded, present);
      // Listed until they are gone: an unbind applied meanwhile would find them going.
      throw expectedRetry(
        `waiting for ${present.length} object(s) the unbind applied to go from cluster ${loaded.cluster.id}`,
      );
    }
    await records.write({
      kind: 'status',
      record: 'binding',
      namespace: binding.metadata.namespace!,
      name: binding.metadata.name,
      status: { unbindResources: [] },
    });
    return 0;
  }

  /** Deletes what was applied for the target (deleteResources). */
  async function deleteResourcesOf(target: Target): Promise<number> {
    const loaded = await load(target);
    const { binding, cluster } = loaded;
    if (binding) {
      const manager = bindingFieldManager(binding.metadata.name);
      const shared = instanceResourcesOf(
        binding.status?.resources ?? [],
        loaded.instance.status?.resources ?? [],
      );
      const added = await addedByAdoptedBind(loaded, target, shared);
      for (const ref of shared) {
        await kubeCall(
          `releasing the fields of binding ${binding.spec.id} in ${describe(ref, cluster.id)}`,
          () => releaseFields(cluster, ref, manager),
          sisterId(cluster),
        );
        const removal = added.find((a) => sameResource(a.ref, ref))?.removal;
        if (removal)
          await kubeCall(
            `taking out of ${describe(ref, cluster.id)} what the bind of binding ${binding.spec.id} added`,
            () => mergePatchObject(cluster, ref, removal, manager),
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
  }
}
