/**
 * The steps of an operation on a cluster with a worker of its own, which holds no credentials to
 * read the master's records: the landscape reads the records the step works from
 * ({@link landscapeSideActivities} `recordsForCluster`), the step runs there with them and answers
 * what to write on the master, and the landscape writes it (`recordFromCluster`), as far as
 * resources/master-writes.ts allows. A bind's response never travels through Temporal: the
 * cluster's worker leaves it in its drop box on the master, and the landscape moves it next to the
 * binding's record.
 */
import { applyObject } from '../kube/objects.js';
import { masterWriteRefusal, type MasterWrite } from '../resources/master-writes.js';
import { bindingSecretName, dropBoxNamespace } from '../resources/names.js';
import {
  stepSubject,
  type ClusterStepResult,
  type RecordsFromMaster,
  type WithRecords,
} from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { responseSecret } from './desired-objects.js';
import { FAILURE_TYPES, retryable, terminal } from './failures.js';
import { leftClusterOnMaster } from './leaving.js';
import {
  deleteSecret,
  readSecret,
  recordsGiven,
  recordsOnMaster,
  secretCopy,
  writeRecord,
  type DropBox,
} from './master-records.js';
import { removeBindingRecordOnMaster, removeInstanceRecordsOnMaster } from './records.js';
import { kubeCall } from './resources.js';

/** The activities the landscape runs for the steps on a cluster with a worker of its own. */
export function landscapeSideActivities(deps: ActivityDeps) {
  const { clusters } = deps;
  const master = clusters.master;
  const records = recordsOnMaster(master);

  /** Moves a bind's response from the cluster's drop box next to the binding's record; done when it is there already. */
  async function moveResponse(
    clusterId: string,
    subject: ReturnType<typeof stepSubject>,
    secretName: string,
  ) {
    const ref = subject.binding!;
    const dropBox = dropBoxNamespace(clusters.namespace, clusterId);
    const left = await readSecret(master, dropBox, secretName);
    if (!left) {
      if (await readSecret(master, ref.namespace, secretName)) return;
      throw retryable(`the response of binding ${ref.bindingId} is not in drop box ${dropBox}`);
    }
    const binding = await records.binding(ref.namespace, ref.name);
    if (!binding) throw retryable(`binding ${ref.bindingId} has no record`);
    const json = Buffer.from(left.data?.response ?? '', 'base64').toString('utf8');
    await applyObject(master, responseSecret(binding, secretName, json));
    await deleteSecret(master, dropBox, secretName);
  }

  /**
   * Moves a generated Secret that a move handed over from the drop box of the cluster `clusterId`
   * to the drop box of the cluster `dropBoxOf` the step names, where the other side of the move
   * takes it; done when it is there already, or when it is where it is to be.
   */
  async function forwardHandedOver(clusterId: string, dropBoxOf: string | undefined, secretName: string) {
    if (dropBoxOf === undefined || dropBoxOf === clusterId) return;
    const from = dropBoxNamespace(clusters.namespace, clusterId);
    const dropBox = dropBoxNamespace(clusters.namespace, dropBoxOf);
    const left = await readSecret(master, from, secretName);
    if (!left) {
      if (await readSecret(master, dropBox, secretName)) return;
      throw retryable(`the handed-over Secret ${secretName} is not in drop box ${from}`);
    }
    const copy = secretCopy(left, secretName, {});
    await applyObject(master, { ...copy, metadata: { ...copy.metadata, namespace: dropBox } });
    await deleteSecret(master, from, secretName);
  }

  return {
    /**
     * The records a step on a cluster with a worker of its own works from: the instance's, and its
     * bindings'. Specs and statuses; no Secret.
     */
    async recordsForCluster(arg: unknown): Promise<RecordsFromMaster> {
      const { instance } = stepSubject(arg);
      const [record, bindings] = await Promise.all([
        records.instance(instance.namespace, instance.name),
        records.bindingsOf(instance),
      ]);
      return { ...(record ? { instance: record } : {}), bindings };
    },

    /**
     * Writes on the master what the step `step` on a cluster with a worker of its own asked for,
     * in order; refuses, for good, a write that is not its to ask (resources/master-writes.ts).
     */
    async recordFromCluster(step: string, arg: unknown, toMaster: readonly MasterWrite[]): Promise<void> {
      const subject = stepSubject(arg);
      for (const write of toMaster) {
        const refused = masterWriteRefusal(step, subject, write);
        if (refused)
          throw terminal(
            `The worker of the instance's cluster asked for a write the landscape refuses: ${refused}`,
            FAILURE_TYPES.instance,
          );
      }
      const clusterId = (arg as { cluster?: string }).cluster ?? subject.instance.clusterId;
      for (const write of toMaster) {
        const what = `recording on the master what step ${step} did on cluster ${clusterId}`;
        switch (write.kind) {
          case 'status':
          case 'labels':
            await kubeCall(what, () => writeRecord(master, write));
            break;
          case 'response':
            await kubeCall(what, () => moveResponse(clusterId!, subject, write.secretName));
            break;
          case 'removeInstanceRecord':
            await kubeCall(what, () => removeInstanceRecordsOnMaster(deps, subject.instance));
            break;
          case 'removeBindingRecord':
            await kubeCall(what, async () => {
              await removeBindingRecordOnMaster(master, subject.binding!);
              await deleteSecret(
                master,
                dropBoxNamespace(clusters.namespace, clusterId!),
                bindingSecretName(subject.binding!.name),
              );
            });
            break;
          case 'leftCluster':
            await kubeCall(what, () =>
              leftClusterOnMaster(master, clusters.namespace, subject.instance, clusterId!),
            );
            break;
          case 'handedOver':
            await kubeCall(what, () =>
              forwardHandedOver(clusterId!, (arg as { dropBoxOf?: string }).dropBoxOf, write.secretName),
            );
            break;
        }
      }
    },
  };
}

/**
 * The activities of a cluster's own worker, `steps` made from `make`: a step given the records
 * (its first argument's `fromMaster`) works from them, reads nothing on the master, and answers
 * its result with what to write there ({@link ClusterStepResult}); one given none (sent by an
 * operation that began before the steps were given their records) runs as it is.
 */
export function clusterSideActivities<A extends Record<string, (...args: never[]) => Promise<unknown>>>(
  deps: ActivityDeps,
  dropBox: DropBox | undefined,
  make: (deps: ActivityDeps) => A,
): A {
  const plain = make(deps);
  const wrapped = Object.keys(plain).map((name) => [
    name,
    async (first: WithRecords<object>, ...rest: unknown[]): Promise<unknown> => {
      const call = (activities: A, arg: unknown) =>
        (activities[name] as unknown as (...a: unknown[]) => Promise<unknown>)(arg, ...rest);
      if (!first || typeof first !== 'object' || !first.fromMaster) return call(plain, first);
      const { fromMaster, ...arg } = first;
      const toMaster: MasterWrite[] = [];
      const value = await call(make({ ...deps, records: recordsGiven(fromMaster, toMaster, dropBox) }), arg);
      return { value, toMaster } satisfies ClusterStepResult;
    },
  ]);
  return Object.fromEntries(wrapped) as A;
}
