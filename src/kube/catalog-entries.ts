/**
 * The finalizer that holds an SFPlan or SFService while instance records of it remain, so that
 * deleting a plan or service from the catalog waits for its last instance to be deprovisioned (and
 * the plan's templates serve that deprovision). The instance steps keep it level-based: recording
 * an instance holds its plan and service; removing one (moving it to another plan, or an admin
 * forcing its removal) releases those of which no record is left.
 */
import type { ClusterClient } from './clients.js';
import { getRecord, listRecords, patchRecord } from './custom-objects.js';
import { apiMessageOf, isNotFound, statusCodeOf } from './errors.js';
import { CATALOG_FINALIZER, LABELS, labelValue } from '../resources/names.js';
import {
  SFPLAN,
  SFSERVICE,
  SFSERVICEINSTANCE,
  type KubeObject,
  type ResourceKind,
  type SFServiceInstance,
} from '../resources/types.js';

/**
 * The finalizers of a catalog entry, with ours added while it has instances and taken away once
 * it has none; undefined when nothing changes. A finalizer cannot be added to an object being
 * deleted, so none is.
 */
export function catalogFinalizers(entry: Pick<KubeObject, 'metadata'>, inUse: boolean): string[] | undefined {
  const finalizers = entry.metadata.finalizers ?? [];
  const has = finalizers.includes(CATALOG_FINALIZER);
  if (inUse && !has && !entry.metadata.deletionTimestamp) return [...finalizers, CATALOG_FINALIZER];
  if (!inUse && has) return finalizers.filter((f) => f !== CATALOG_FINALIZER);
  return undefined;
}

/** Where the catalog and the instance records are. */
export interface CatalogPlaces {
  readonly master: ClusterClient;
  /** The catalog's namespace. */
  readonly namespace: string;
  /** Namespace of all instance records; each its own when unset. */
  readonly instanceNamespace?: string;
}

/** The ids whose catalog entries a change of instance records concerns. */
export interface CatalogIds {
  readonly serviceIds: readonly string[];
  readonly planIds: readonly string[];
}

/** Records this many at most are read to tell whether an entry is in use. */
const PAGE = 50;

async function inUse(places: CatalogPlaces, label: string, id: string): Promise<boolean> {
  const selector = `${label}=${labelValue(id)}`;
  const list = (
    places.instanceNamespace
      ? await places.master.custom.listNamespacedCustomObject({
          group: SFSERVICEINSTANCE.group,
          version: SFSERVICEINSTANCE.version,
          plural: SFSERVICEINSTANCE.plural,
          namespace: places.instanceNamespace,
          labelSelector: selector,
          limit: PAGE,
        })
      : await places.master.custom.listCustomObjectForAllNamespaces({
          group: SFSERVICEINSTANCE.group,
          version: SFSERVICEINSTANCE.version,
          plural: SFSERVICEINSTANCE.plural,
          labelSelector: selector,
          limit: PAGE,
        })
  ) as { items: SFServiceInstance[]; metadata?: { continue?: string } };
  // A record being removed no longer holds its plan: its removal waits for this step.
  return list.items.some((r) => !r.metadata.deletionTimestamp) || Boolean(list.metadata?.continue);
}

type CatalogEntry = KubeObject & { spec?: { id?: string } };

/**
 * The SFPlans or SFServices with this OSB id: the one named after the id (as the original names
 * them), else those the namespace lists with it.
 */
async function entriesWithId(places: CatalogPlaces, kind: ResourceKind, id: string): Promise<CatalogEntry[]> {
  const named = await getRecord<CatalogEntry>(places.master, kind, places.namespace, id).catch(
    () => undefined,
  );
  if (named?.spec?.id === id) return [named];
  const all = await listRecords<CatalogEntry>(places.master, kind, places.namespace);
  return all.filter((e) => e.spec?.id === id);
}

async function settle(
  places: CatalogPlaces,
  kind: ResourceKind,
  id: string,
  used: () => Promise<boolean>,
): Promise<void> {
  for (const entry of await entriesWithId(places, kind, id)) {
    const finalizers = catalogFinalizers(entry, await used());
    if (!finalizers) continue;
    try {
      await patchRecord(places.master, kind, places.namespace, entry.metadata.name, {
        metadata: { finalizers, resourceVersion: entry.metadata.resourceVersion },
      });
    } catch (err) {
      if (isNotFound(err)) continue;
      // A conflict: the entry changed since it was read; the caller runs again and decides anew.
      throw Object.assign(
        new Error(
          `updating the finalizers of ${kind.kind} ${places.namespace}/${entry.metadata.name}: ${apiMessageOf(err)}`,
        ),
        { code: statusCodeOf(err) },
      );
    }
  }
}

/** Holds the plan and service of an instance that has a record. Running it twice changes nothing. */
export async function holdCatalogEntries(
  places: CatalogPlaces,
  ids: { readonly serviceId: string; readonly planId: string },
): Promise<void> {
  const held = () => Promise.resolve(true);
  await settle(places, SFPLAN, ids.planId, held);
  await settle(places, SFSERVICE, ids.serviceId, held);
}

/**
 * Releases the plans and services named of which no instance record remains (one being removed
 * does not count). Running it twice changes nothing.
 */
export async function releaseCatalogEntries(places: CatalogPlaces, ids: CatalogIds): Promise<void> {
  for (const id of new Set(ids.planIds))
    await settle(places, SFPLAN, id, () => inUse(places, LABELS.planId, id));
  for (const id of new Set(ids.serviceIds))
    await settle(places, SFSERVICE, id, () => inUse(places, LABELS.serviceId, id));
}
