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
  /** Writes a record's status (while it is as read, when the write says so) or labels. */
  write(write: RecordWrite): Promise<void>;
  /** Keeps a bind's response (its JSON text) in the Secret `secretName`, where the broker reads it. */
  writeResponse(binding: SFServiceBinding, secretName: string, json: string): Promise<void>;
  /** Removes the instance's (`removeInstanceRecord`) or binding's records, by `onMaster` here. */
  remove(kind: 'removeInstanceRecord' | 'removeBindingRecord', onMaster: () => Promise<void>): Promise<void>;
  /** Ends the instance's stay on the step's cluster on the master (`leftCluster`), by `onMaster` here. */
  leftCluster(onMaster: () => Promise<void>): Promise<void>;
}

/** Writes a record's status or labels on the master. */
export async function writeRecord(master: ClusterClient, write: RecordWrite): Promise<void> {
  if (write.kind === 'labels') {
    await patchRecord(master, SFSERVICEINSTANCE, write.namespace, write.name, {
      metadata: { labels: write.labels },
    });
    return;
  }
  await patchRecordStatus(
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
  return {
    instance: async (namespace, name) =>
      given.instance && same(given.instance, namespace, name) ? given.instance : undefined,
    binding: async (namespace, name) => given.bindings.find((b) => same(b, namespace, name)),
    bindingsOf: async () => [...given.bindings],
    write: async (write) => void toMaster.push(write),
    writeResponse: async (binding, secretName, json) => {
      if (!dropBox)
        throw new Error(
          'this worker has no drop box on the master for bind responses: set INTEROP_MASTER_KUBECONFIG to its identity there',
        );
      await applyObject(dropBox.client, dropBoxSecret(binding, dropBox.namespace, secretName, json));
      toMaster.push({ kind: 'response', secretName });
    },
    remove: async (kind) => void toMaster.push({ kind }),
    leftCluster: async () => void toMaster.push({ kind: 'leftCluster' }),
  };
}
