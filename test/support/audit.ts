/**
 * The audit that ends a fault run: does what the platform was promised still hold? It walks every
 * cluster (the plan's objects and credentials Secrets in every namespace), the broker's records
 * (SFServiceInstance, SFServiceBinding) and Temporal's visibility (every run of the run's workflow
 * ids), and sums it up in one line: `N operations, N ended, 0 lost, 0 duplicated, 0 orphaned`.
 *
 * - ended: an accepted operation whose run closed in the state the test expected of it;
 * - lost: an accepted operation that did not (no run, still running, another outcome), or an
 *   object a live instance or binding should have and has not;
 * - duplicated: a run that no accepted operation names (a second operation for one request), or
 *   a second object where the plan renders one;
 * - orphaned: anything of a deprovisioned instance, an unbound binding or a refused request that
 *   is still there (an object, a namespace, a record, a credentials Secret), and any object of the
 *   plan's kinds in a namespace of no instance.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { ClusterClient } from '../../src/kube/clients.js';
import {
  bindingSecretName,
  bindingWorkflowId,
  instanceNamespace,
  instanceWorkflowId,
  resourceName,
} from '../../src/resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type ResourceKind,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { MEMO_KEY, parseOperationString, type OperationStatus } from '../../src/workflows/messages.js';

/** An operation a broker accepted (202 with this operation), and how the test expects it to end. */
export interface AcceptedOperation {
  readonly instanceId: string;
  /** Set for a bind or an unbind. */
  readonly bindingId?: string;
  /** The `operation` of the broker's answer: `<type>:<run id>`. */
  readonly operation: string;
  /** @default 'succeeded' */
  readonly expected?: 'succeeded' | 'failed';
}

/** What should exist at the end: the run's instances, each with its bindings. */
export interface ExpectedInstance {
  readonly id: string;
  /** False once deprovisioned (or never provisioned): nothing of it may remain. */
  readonly live: boolean;
  readonly bindings: readonly { readonly id: string; readonly live: boolean }[];
}

/** A kind of object the plan renders (or its operator makes), walked in every namespace of every cluster. */
export interface PlanKind {
  /** Its name in the verdict's details, e.g. `postgresql`. */
  readonly label: string;
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  /**
   * How many of it a live instance has in its namespace on its cluster, given the names of its
   * live bindings; none anywhere else.
   */
  count(instanceName: string, liveBindingNames: readonly string[]): number;
  /** Which objects of the kind count (e.g. Secrets of the operator, not a service account's). @default all */
  readonly select?: (object: KubeObject) => boolean;
}

export interface AuditInput {
  /** Admin clients of every cluster, master first. */
  readonly clusters: readonly ClusterClient[];
  /** Temporal's client, for visibility. */
  readonly temporal: Client;
  readonly operations: readonly AcceptedOperation[];
  readonly instances: readonly ExpectedInstance[];
  readonly kinds: readonly PlanKind[];
  /**
   * Instances of earlier runs on the same servers: their objects are theirs, not strays of this
   * run. Any other object of the plan's kinds outside this run's instances' namespaces is orphaned.
   * @default none
   */
  readonly earlierInstances?: readonly string[];
  /**
   * Which runs of the instances' workflows the broker started itself (a rollout's updates, a
   * scheduled rotation), by their memo: each must have ended and succeeded, and none is a second
   * operation for a request. Without it every run must be an accepted operation's.
   */
  readonly startedByBroker?: (memo: OperationStatus | undefined) => boolean;
}

export interface Verdict {
  readonly operations: number;
  readonly ended: number;
  readonly lost: number;
  readonly duplicated: number;
  readonly orphaned: number;
  /** Runs the broker started itself (see {@link AuditInput.startedByBroker}). */
  readonly brokerRuns: number;
  /** One line per finding, empty when all is well. */
  readonly findings: readonly string[];
  /** `N operations, N ended, 0 lost, 0 duplicated, 0 orphaned`. */
  readonly line: string;
}

const workflowIdOf = (op: { instanceId: string; bindingId?: string }): string =>
  op.bindingId ? bindingWorkflowId(op.instanceId, op.bindingId) : instanceWorkflowId(op.instanceId);

async function runsOf(temporal: Client, workflowId: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const run of temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(run);
  return runs;
}

async function listAll(cluster: ClusterClient, kind: PlanKind | ResourceKind): Promise<KubeObject[]> {
  if ('label' in kind && kind.group === '') {
    const list =
      kind.plural === 'secrets'
        ? await cluster.core.listSecretForAllNamespaces()
        : kind.plural === 'services'
          ? await cluster.core.listServiceForAllNamespaces()
          : kind.plural === 'configmaps'
            ? await cluster.core.listConfigMapForAllNamespaces()
            : undefined;
    if (!list) throw new Error(`the audit cannot list core ${kind.plural}`);
    return list.items as KubeObject[];
  }
  const list = (await cluster.custom.listClusterCustomObject({
    group: kind.group,
    version: kind.version,
    plural: kind.plural,
  })) as { items: KubeObject[] };
  return list.items;
}

/** Walks everything once and returns the verdict; {@link auditUntilSettled} waits for deletions to finish. */
export async function audit(input: AuditInput): Promise<Verdict> {
  const findings: { what: 'lost' | 'duplicated' | 'orphaned'; text: string }[] = [];
  const find = (what: 'lost' | 'duplicated' | 'orphaned', text: string) => findings.push({ what, text });

  // ---- Temporal: each accepted operation's run closed as expected, and no run beyond them.
  let ended = 0;
  const workflowIds = new Set<string>();
  for (const instance of input.instances) {
    workflowIds.add(instanceWorkflowId(instance.id));
    for (const binding of instance.bindings) workflowIds.add(bindingWorkflowId(instance.id, binding.id));
  }
  for (const op of input.operations) workflowIds.add(workflowIdOf(op));
  const runs = new Map<string, WorkflowExecutionInfo>();
  const runsByWorkflow = new Map<string, WorkflowExecutionInfo[]>();
  for (const workflowId of workflowIds) {
    const found = await runsOf(input.temporal, workflowId);
    runsByWorkflow.set(workflowId, found);
    for (const run of found) runs.set(run.runId, run);
  }
  const accepted = new Set<string>();
  for (const op of input.operations) {
    const parsed = parseOperationString(op.operation);
    const name = `${op.operation} of ${workflowIdOf(op)}`;
    if (!parsed) {
      find('lost', `${name}: not an operation string`);
      continue;
    }
    accepted.add(parsed.runId);
    const run = runs.get(parsed.runId);
    if (!run || run.workflowId !== workflowIdOf(op)) {
      find('lost', `${name}: no such run in Temporal`);
      continue;
    }
    const memo = run.memo?.[MEMO_KEY] as OperationStatus | undefined;
    const expected = op.expected ?? 'succeeded';
    if (run.status.name === 'RUNNING') find('lost', `${name}: still running`);
    else if (memo?.state !== expected)
      find(
        'lost',
        `${name}: ended ${run.status.name} as "${memo?.state ?? '?'}" (${memo?.description ?? ''}), expected ${expected}`,
      );
    else ended += 1;
  }
  let brokerRuns = 0;
  for (const [workflowId, found] of runsByWorkflow) {
    for (const run of found) {
      if (!accepted.has(run.runId)) {
        const memo = run.memo?.[MEMO_KEY] as OperationStatus | undefined;
        if (input.startedByBroker?.(memo)) {
          // The broker's own operation (a rollout's update, a scheduled rotation): it must have ended, and succeeded.
          brokerRuns += 1;
          if (run.status.name === 'RUNNING' || memo?.state !== 'succeeded')
            find(
              'lost',
              `${workflowId} run ${run.runId} (${memo?.operation ?? '?'} of the broker) ended ${run.status.name} as "${memo?.state ?? '?'}" (${memo?.description ?? ''})`,
            );
          continue;
        }
        find(
          'duplicated',
          `${workflowId} run ${run.runId} (${memo?.operation ?? '?'}, ${run.status.name}) is no accepted operation`,
        );
      }
    }
  }

  // ---- Kubernetes: every cluster, every namespace.
  const [master] = input.clusters;
  if (!master) throw new Error('the audit needs the master cluster');
  const byNamespace = new Map<string, ExpectedInstance>();
  for (const instance of input.instances) byNamespace.set(instanceNamespace(instance.id), instance);
  const earlier = new Set((input.earlierInstances ?? []).map((id) => instanceNamespace(id)));
  const bindingNames = new Map<string, { instance: ExpectedInstance; live: boolean }>();
  for (const instance of input.instances)
    for (const b of instance.bindings)
      bindingNames.set(resourceName(b.id), { instance, live: instance.live && b.live });

  const instanceRecords = await listAll(master, SFSERVICEINSTANCE);
  const placedOn = new Map<string, string>();
  for (const record of instanceRecords as SFServiceInstance[]) {
    const instance = byNamespace.get(record.metadata.namespace ?? '');
    if (!instance) continue;
    if (record.spec.clusterId) placedOn.set(instance.id, record.spec.clusterId);
  }
  for (const instance of input.instances) {
    const name = resourceName(instance.id);
    const records = instanceRecords.filter(
      (r) => r.metadata.namespace === instanceNamespace(instance.id) && r.metadata.name === name,
    );
    if (instance.live && records.length === 0) find('lost', `instance ${instance.id}: no SFServiceInstance`);
    if (!instance.live && records.length > 0)
      find('orphaned', `instance ${instance.id}: its SFServiceInstance is still there`);
  }
  const bindingRecords = await listAll(master, SFSERVICEBINDING);
  for (const [name, { instance, live }] of bindingNames) {
    const records = bindingRecords.filter(
      (r) => r.metadata.name === name && r.metadata.namespace === instanceNamespace(instance.id),
    );
    if (live && records.length === 0) find('lost', `binding ${name}: no SFServiceBinding`);
    if (!live && records.length > 0) find('orphaned', `binding ${name}: its SFServiceBinding is still there`);
  }

  // The credentials Secret of each binding: exactly one in the master while it lives, none after.
  const masterSecrets = await master.core.listSecretForAllNamespaces();
  for (const [name, { live }] of bindingNames) {
    const secrets = masterSecrets.items.filter((s) => s.metadata?.name === bindingSecretName(name));
    if (live && secrets.length === 0) find('lost', `binding ${name}: no credentials Secret`);
    if (live && secrets.length > 1)
      find('duplicated', `binding ${name}: ${secrets.length} credentials Secrets`);
    if (!live && secrets.length > 0)
      find('orphaned', `binding ${name}: its credentials Secret is still there`);
  }

  for (const cluster of input.clusters) {
    // Namespaces of instances: an instance's own on its cluster (and the master, for its records);
    // none of a deprovisioned one anywhere.
    const namespaces = await cluster.core.listNamespace();
    for (const ns of namespaces.items) {
      const instance = byNamespace.get(ns.metadata?.name ?? '');
      if (instance && !instance.live)
        find(
          'orphaned',
          `instance ${instance.id}: namespace ${ns.metadata!.name} on cluster ${cluster.id} (${ns.status?.phase ?? '?'})`,
        );
    }
    for (const kind of input.kinds) {
      const objects = (await listAll(cluster, kind)).filter((o) => !kind.select || kind.select(o));
      const counts = new Map<string, number>();
      for (const object of objects) {
        const namespace = object.metadata.namespace ?? '';
        const instance = byNamespace.get(namespace);
        if (instance) counts.set(instance.id, (counts.get(instance.id) ?? 0) + 1);
        else if (!earlier.has(namespace))
          find(
            'orphaned',
            `${kind.label} ${namespace}/${object.metadata.name} on cluster ${cluster.id}: of no instance`,
          );
      }
      for (const instance of input.instances) {
        const have = counts.get(instance.id) ?? 0;
        const home = placedOn.get(instance.id);
        const liveBindings = instance.bindings.filter((b) => b.live).map((b) => resourceName(b.id));
        const want =
          instance.live && home === cluster.id ? kind.count(resourceName(instance.id), liveBindings) : 0;
        const where = `instance ${instance.id}: ${kind.label} on cluster ${cluster.id}`;
        if (have < want) find('lost', `${where}: ${have} of ${want}`);
        else if (have > want)
          find(want === 0 ? 'orphaned' : 'duplicated', `${where}: ${have}, expected ${want}`);
      }
    }
  }

  const count = (what: string) => findings.filter((f) => f.what === what).length;
  const operations = input.operations.length;
  const lost = count('lost');
  const duplicated = count('duplicated');
  const orphaned = count('orphaned');
  return {
    operations,
    ended,
    lost,
    duplicated,
    orphaned,
    brokerRuns,
    findings: findings.map((f) => `${f.what}: ${f.text}`),
    line: `${operations} operations, ${ended} ended, ${lost} lost, ${duplicated} duplicated, ${orphaned} orphaned`,
  };
}

const clean = (v: Verdict): boolean =>
  v.ended === v.operations && v.lost === 0 && v.duplicated === 0 && v.orphaned === 0;

/**
 * Audits until the verdict is clean or `timeoutMs` has passed (what a finished deprovision
 * deletes, the garbage collector and the namespace controller finish a moment later), prints the
 * verdict line (and the findings) and returns the last verdict.
 */
export async function auditUntilSettled(
  input: AuditInput,
  label: string,
  timeoutMs = 60_000,
): Promise<Verdict> {
  const deadline = Date.now() + timeoutMs;
  let verdict = await audit(input);
  while (!clean(verdict) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1000));
    verdict = await audit(input);
  }
  const details = verdict.findings.length ? `\n  ${verdict.findings.slice(0, 50).join('\n  ')}` : '';
  console.log(`[audit] ${label}: ${verdict.line}${details}`);
  return verdict;
}
