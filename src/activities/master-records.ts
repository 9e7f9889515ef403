/**
 * The master's records as the operation steps read and write them. The landscape's workers reach
 * the master ({@link recordsOnMaster}). The worker of a cluster with a worker of its own cannot:
 * its step works from the records the landscape read and gave it ({@link recordsGiven}) and
 * answers what to write, which the landscape writes (cluster-steps.ts); a bind's response, a
 * secret, never travels that way: that worker leaves it in its drop box on the master, the one
 * namespace there it may write.
 */
import type { ClusterClient } from '../kube/clients.js';
import { getRecord, listRecords, patchRecord, patchRecordStatus } from '../kube/custom-objects.js';
import type { V1Secret } from '@kubernetes/client-node';
import { isNotFound } from '../kube/errors.js';
import { applyObject } from '../kube/objects.js';
import { LABELS, labelValue } from '../resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import type { InstanceRef, MasterWrite, RecordsFromMaster } from '../workflows/messages.js';
import { responseSecret } from './desired-objects.js';

/** A write of a record's status or labels. */
export type RecordWrite = Extract<MasterWrite, { kind: 'status' | 'labels' }>;

/** The master's records, for the operation steps. */
export interface MasterRecords {
  instance(namespace: string, name: string): Promise<SFServiceInstance | undefined>;
  binding(namespace: string, name: string): Promise<SFServiceBinding | undefined>;
  /** The records of the instance's bindings. */
  bindingsOf(instance: InstanceRef): Promise<SFServiceBinding[]>;
  /**
   * Writes a record's status (while it is as read, when the write says so) or labels; answers the
   * record as written, when the write reached it here.
   */
  write(write: RecordWrite): Promise<KubeObject | void>;
  /** Keeps a bind's response (its JSON text) in the Secret `secretName`, where the broker reads it. */
  writeResponse(binding: SFServiceBinding, secretName: string, json: string): Promise<void>;
  /** Removes the instance's (`removeInstanceRecord`) or binding's records, by `onMaster` here. */
  remove(kind: 'removeInstanceRecord' | 'removeBindingRecord', onMaster: () => Promise<void>): Promise<void>;
  /** Ends the instance's stay on the step's cluster on the master (`leftCluster`), by `onMaster` here. */
  leftCluster(onMaster: () => Promise<void>): Promise<void>;
  /**
   * Leaves a generated Secret a move hands over (`secret`, named as resources/names.ts
   * `handedOverSecretName` says) in the drop box `dropBox` on the master, for the other side of the
   * move. A cluster's own worker writes only its own drop box: it leaves it there, and the
   * landscape moves it on (`handedOver`).
   */
  handOver(secret: KubeObject, dropBox: string): Promise<void>;
  /** A Secret left in the drop box `dropBox` on the master; a cluster's own worker reads its own alone. */
  inDropBox(dropBox: string, name: string): Promise<V1Secret | undefined>;
  /** Takes a Secret out of the drop box `dropBox` on the master; gone counts as done. */
  clearDropBox(dropBox: string, name: string): Promise<void>;
}

/** Writes a record's status or labels on the master; answers the record as written. */
export async function writeRecord(master: ClusterClient, write: RecordWrite): Promise<KubeObject> {
  if (write.kind === 'labels') {
    return patchRecord(master, SFSERVICEINSTANCE, write.namespace, write.name, {
      metadata: { labels: write.labels },
    });
  }
  return patchRecordStatus(
    master,
    write.record === 'binding' ? SFSERVICEBINDING : SFSERVICEINSTANCE,
    write.namespace,
    write.name,
    { ...write.status },
    write.resourceVersion,
  );
}

/** The records as the landscape's workers read and write them: on the master. */
export function recordsOnMaster(master: ClusterClient): MasterRecords {
  return {
    instance: (namespace, name) => getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, namespace, name),
    binding: (namespace, name) => getRecord<SFServiceBinding>(master, SFSERVICEBINDING, namespace, name),
    bindingsOf: (instance) =>
      listRecords<SFServiceBinding>(
        master,
        SFSERVICEBINDING,
        instance.namespace,
        `${LABELS.instanceId}=${labelValue(instance.instanceId)}`,
      ),
    write: (write) => writeRecord(master, write),
    writeResponse: async (binding, secretName, json) => {
      await applyObject(master, responseSecret(binding, secretName, json));
    },
    remove: (_kind, onMaster) => onMaster(),
    leftCluster: (onMaster) => onMaster(),
    handOver: async (secret, dropBox) => {
      await applyObject(master, { ...secret, metadata: { ...secret.metadata, namespace: dropBox } });
    },
    inDropBox: (dropBox, name) => readSecret(master, dropBox, name),
    clearDropBox: (dropBox, name) => deleteSecret(master, dropBox, name),
  };
}

/** Where a cluster's worker leaves the bind responses: its namespace of the master, with a client allowed there alone. */
export interface DropBox {
  readonly client: ClusterClient;
  readonly namespace: string;
}

/** The Secret of a bind's response in a drop box: the broker never reads it there, the landscape moves it. */
export function dropBoxSecret(
  binding: SFServiceBinding,
  dropBox: string,
  secretName: string,
  json: string,
): KubeObject {
  const { ownerReferences: _none, ...metadata } = responseSecret(binding, secretName, json).metadata;
  return {
    ...responseSecret(binding, secretName, json),
    metadata: { ...metadata, namespace: dropBox },
  };
}

/**
 * The records as a cluster's own worker sees them: those given to its step, read by the landscape
 * just before; what the step writes is added to `toMaster`, for the landscape to write, but the
 * bind's response, which goes into `dropBox`.
 */
export function recordsGiven(
  given: RecordsFromMaster,
  toMaster: MasterWrite[],
  dropBox: DropBox | undefined,
): MasterRecords {
  const same = (
    record: { metadata: { namespace?: string; name: string } },
    namespace: string,
    name: string,
  ) => record.metadata.namespace === namespace && record.metadata.name === name;
  /** Its drop box; `namespace`, when given, must be it: the worker may read no other. */
  const ownDropBox = (namespace?: string): DropBox => {
    if (!dropBox)
      throw new Error(
        'this worker has no drop box on the master: set INTEROP_MASTER_KUBECONFIG to its identity there',
      );
    if (namespace !== undefined && namespace !== dropBox.namespace)
      throw new Error(`this worker reads only its own drop box ${dropBox.namespace}, not ${namespace}`);
    return dropBox;
  };
  return {
    instance: async (namespace, name) =>
      given.instance && same(given.instance, namespace, name) ? given.instance : undefined,
    binding: async (namespace, name) => given.bindings.find((b) => same(b, namespace, name)),
    bindingsOf: async () => [...given.bindings],
    write: async (write) => void toMaster.push(write),
    writeResponse: async (binding, secretName, json) => {
      const own = ownDropBox();
      await applyObject(own.client, dropBoxSecret(binding, own.namespace, secretName, json));
      toMaster.push({ kind: 'response', secretName });
    },
    remove: async (kind) => void toMaster.push({ kind }),
    leftCluster: async () => void toMaster.push({ kind: 'leftCluster' }),
    handOver: async (secret) => {
      const own = ownDropBox();
      await applyObject(own.client, {
        ...secret,
        metadata: { ...secret.metadata, namespace: own.namespace },
      });
      toMaster.push({ kind: 'handedOver', secretName: secret.metadata.name });
    },
    inDropBox: (namespace, name) => readSecret(ownDropBox(namespace).client, namespace, name),
    clearDropBox: (namespace, name) => deleteSecret(ownDropBox(namespace).client, namespace, name),
  };
}

/** A Secret on the cluster, undefined when it is not there. */
export async function readSecret(
  cluster: ClusterClient,
  namespace: string,
  name: string,
): Promise<V1Secret | undefined> {
  try {
    return await cluster.core.readNamespacedSecret({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Deletes a Secret on the cluster; gone counts as done. */
export async function deleteSecret(cluster: ClusterClient, namespace: string, name: string): Promise<void> {
  try {
    await cluster.core.deleteNamespacedSecret({ namespace, name });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * A copy of a Secret named `name`: its type, labels (with `labels` set, or taken off where null)
 * and data, immutable, owned as `ownerReferences` say; placed in a namespace by whoever creates it.
 */
export function secretCopy(
  secret: V1Secret,
  name: string,
  labels: Readonly<Record<string, string | null>>,
  ownerReferences: readonly unknown[] = [],
): KubeObject {
  const merged: Record<string, string> = { ...(secret.metadata?.labels ?? {}) };
  for (const [key, value] of Object.entries(labels))
    if (value === null) delete merged[key];
    else merged[key] = value;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    ...(secret.type ? { type: secret.type } : {}),
    immutable: true,
    metadata: {
      name,
      labels: merged,
      ...(ownerReferences.length ? { ownerReferences: [...ownerReferences] } : {}),
    },
    data: secret.data ?? {},
  } as KubeObject;
}
