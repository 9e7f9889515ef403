/**
 * The adoption of a Service Fabrik landscape's records in the master (src/adoption/rules.ts
 * decides): reads every instance and binding record Service Fabrik left, the clusters this
 * landscape registers and the Secrets with the bindings' credentials; then, unless it is a dry run,
 * writes on each adoptable record what makes it ours (metadata and spec in one patch at the version
 * read, then the status), instances before their bindings. Nothing else is touched: not the
 * operator's objects, not the Secrets, not a record it cannot adopt.
 */
import type { AdoptionItem, AdoptionReport } from '../admin/contract.js';
import {
  bindingAdoption,
  bindingSecretOf,
  instanceAdoption,
  isOurs,
  type AdoptionDecision,
  type AdoptionLandscape,
} from '../adoption/rules.js';
import { holdCatalogEntries } from '../kube/catalog-entries.js';
import type { CatalogCache } from '../kube/catalog-cache.js';
import type { ClusterClient } from '../kube/clients.js';
import { listRecords, listRecordsAnywhere, patchRecord, patchRecordStatus } from '../kube/custom-objects.js';
import { isNotFound } from '../kube/errors.js';
import { LABELS } from '../resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type ResourceKind,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import type { Records } from './records.js';
import type { RequestDigests } from './request-digest.js';

export interface AdoptionDeps {
  readonly master: ClusterClient;
  readonly catalog: CatalogCache;
  readonly records: Records;
  readonly digests: RequestDigests;
  /** The registry's namespace: the catalog and the SFClusters. */
  readonly namespace: string;
  /** The master's id in the cluster registry. */
  readonly masterClusterId: string;
  /** One namespace for all instances; each its own when unset. */
  readonly instanceNamespace?: string;
  /** Where the audit line goes: the broker's logger. */
  readonly log: { info(message: string, fields?: Record<string, unknown>): void };
}

/** Adopts (or, with `dryRun`, lists) the records Service Fabrik left in the master. */
export async function adoptServiceFabrikRecords(
  deps: AdoptionDeps,
  dryRun: boolean,
  requestedBy: string,
): Promise<AdoptionReport> {
  const { master, instanceNamespace } = deps;
  const landscape = await landscapeOf(deps);
  const instances = await listRecordsAnywhere<SFServiceInstance>(
    master,
    SFSERVICEINSTANCE,
    instanceNamespace,
  );
  const bindings = await listRecordsAnywhere<SFServiceBinding>(master, SFSERVICEBINDING, instanceNamespace);
  let alreadyAdopted = 0;
  const decided: { record: KubeObject; kind: ResourceKind; decision: AdoptionDecision }[] = [];
  const byInstance = new Map<string, AdoptionDecision>();
  for (const record of instances) {
    if (isOurs(record)) {
      alreadyAdopted += 1;
      continue;
    }
    const decision = instanceAdoption(record, landscape);
    byInstance.set(decision.item.instanceId, decision);
    decided.push({ record, kind: SFSERVICEINSTANCE, decision });
  }
  for (const record of bindings) {
    if (isOurs(record)) {
      alreadyAdopted += 1;
      continue;
    }
    const decision = bindingAdoption(record, await surroundingsOf(deps, record, byInstance), landscape);
    decided.push({ record, kind: SFSERVICEBINDING, decision });
  }
  const adopted: AdoptionItem[] = [];
  const refused: AdoptionItem[] = [];
  for (const { record, kind, decision } of decided) {
    if (!decision.changes) {
      refused.push(decision.item);
      continue;
    }
    if (!dryRun) await write(deps, kind, record, decision);
    adopted.push(decision.item);
  }
  const report: AdoptionReport = { dryRun, adopted, refused, alreadyAdopted };
  deps.log.info(dryRun ? 'service fabrik adoption dry run' : 'service fabrik records adopted', {
    audit: !dryRun,
    requestedBy,
    adopted: adopted.length,
    refused: refused.length,
    alreadyAdopted,
  });
  return report;
}

/** What the rules need of this landscape: its catalog, its clusters, its digests. */
async function landscapeOf(deps: AdoptionDeps): Promise<AdoptionLandscape> {
  const clusters = await listRecords<KubeObject>(deps.master, SFCLUSTER, deps.namespace);
  const labelled = deps.instanceNamespace
    ? new Set<string>()
    : new Set(
        (
          await deps.master.core.listNamespace({ labelSelector: `${LABELS.instanceNamespace}=true` })
        ).items.map((ns) => ns.metadata!.name!),
      );
  const known = new Set([deps.masterClusterId, ...clusters.map((c) => c.metadata.name)]);
  const appGuidOf = (bindResource: Record<string, unknown> | undefined) =>
    typeof bindResource?.app_guid === 'string' ? bindResource.app_guid : undefined;
  return {
    serviceOfPlan: (planId) => deps.catalog.plan(planId)?.spec.serviceId,
    clusterKnown: (clusterId) => known.has(clusterId),
    namespaceLabelled: (namespace) => labelled.has(namespace),
    ...(deps.instanceNamespace ? { instanceNamespace: deps.instanceNamespace } : {}),
    instanceDigest: (spec) => deps.digests.instance(spec).value,
    bindingDigest: (spec) => {
      const appGuid = appGuidOf(spec.bindResource);
      return deps.digests.bind({ ...spec, ...(appGuid ? { appGuid } : {}) }).value;
    },
    now: new Date().toISOString(),
  };
}

/** A binding's instance (decided in this run, or ours already) and whether its credentials are there. */
async function surroundingsOf(
  deps: AdoptionDeps,
  record: SFServiceBinding,
  byInstance: ReadonlyMap<string, AdoptionDecision>,
) {
  const instanceId = record.spec?.instanceId ?? '';
  const decided = byInstance.get(instanceId);
  const ours = decided ? undefined : instanceId ? await deps.records.instance(instanceId) : undefined;
  const instance = decided ?? (ours && isOurs(ours) ? ('ours' as const) : undefined);
  const clusterId = ours?.spec.clusterId ?? clusterOfDecision(decided);
  const secret = bindingSecretOf(record);
  return {
    instance,
    secretFound: secret ? await secretExists(deps.master, record.metadata.namespace!, secret) : false,
    ...(clusterId ? { clusterId } : {}),
  };
}

const clusterOfDecision = (decision: AdoptionDecision | undefined): string | undefined =>
  decision?.changes?.metadata.labels[LABELS.clusterId];

async function secretExists(master: ClusterClient, namespace: string, name: string): Promise<boolean> {
  try {
    await master.core.readNamespacedSecret({ name, namespace });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/**
 * Writes the decision's changes: metadata and spec at the version read (a record that changed
 * since fails with 409, and the adoption is to be run again), then the status; an instance holds
 * its plan and service in the catalog, as one provisioned here does.
 */
async function write(
  deps: AdoptionDeps,
  kind: ResourceKind,
  record: KubeObject,
  decision: AdoptionDecision & { changes: NonNullable<AdoptionDecision['changes']> },
): Promise<void> {
  const { namespace, name } = { namespace: record.metadata.namespace!, name: record.metadata.name };
  const { metadata, spec, status } = decision.changes;
  await patchRecord(deps.master, kind, namespace, name, {
    metadata: { ...metadata, resourceVersion: record.metadata.resourceVersion },
    ...(Object.keys(spec).length > 0 ? { spec } : {}),
  });
  await patchRecordStatus(deps.master, kind, namespace, name, status);
  if (kind === SFSERVICEINSTANCE) {
    const { serviceId, planId } = (record as SFServiceInstance).spec;
    await holdCatalogEntries(
      {
        master: deps.master,
        namespace: deps.namespace,
        ...(deps.instanceNamespace ? { instanceNamespace: deps.instanceNamespace } : {}),
      },
      { serviceId, planId },
    );
  }
}
