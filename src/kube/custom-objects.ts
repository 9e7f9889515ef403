/** Reads and writes of our own custom resources by kind, with NotFound as a value, not an error. */
import {
  Observable,
  PatchStrategy,
  setHeaderOptions,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { isOwnedBy } from '../resources/record-labels.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type ResourceKind,
} from '../resources/types.js';
import type { ClusterClient } from './clients.js';
import { isNotFound } from './errors.js';

/** The kinds of records an installation owns, and lists only its own of. */
const OWNED_KINDS: ReadonlySet<string> = new Set([SFSERVICEINSTANCE.kind, SFSERVICEBINDING.kind]);

/**
 * What a list of `kind` on `cluster` shows: of instance and binding records, those of the
 * installation the client works for ({@link ClusterClient.owner}, by {@link isOwnedBy}); of other
 * kinds, everything.
 */
function ownedOf<T extends KubeObject>(cluster: ClusterClient, kind: ResourceKind, items: T[]): T[] {
  const owner = cluster.owner;
  if (!owner || !OWNED_KINDS.has(kind.kind)) return items;
  return items.filter((item) => isOwnedBy(item.metadata.labels, owner));
}

const params = (kind: ResourceKind, namespace: string) => ({
  group: kind.group,
  version: kind.version,
  plural: kind.plural,
  namespace,
});
const mergePatch = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** The Accept header of a list of the objects' metadata alone (the apiserver's PartialObjectMetadataList). */
export const METADATA_LIST_ACCEPT =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const metadataOnly = () => setHeaderOptions('Accept', METADATA_LIST_ACCEPT);
/**
 * A read the apiserver answers from its watch cache (`resourceVersion=0`) instead of a quorum read
 * of etcd: cheaper, and its cost does not grow with what etcd holds, but it may be a moment behind
 * the latest write. For reads that what they decide on does not change under (a record's owner).
 */
const fromTheWatchCache = () => ({
  middleware: [
    {
      pre: (context: RequestContext) => {
        context.setQueryParam('resourceVersion', '0');
        return new Observable(Promise.resolve(context));
      },
      post: (context: ResponseContext) => new Observable(Promise.resolve(context)),
    },
  ],
  middlewareMergeStrategy: 'append' as const,
});

export async function getRecord<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string,
  name: string,
  read: 'latest' | 'cached' = 'latest',
): Promise<T | undefined> {
  try {
    const options = read === 'cached' ? fromTheWatchCache() : undefined;
    return (await cluster.custom.getNamespacedCustomObject(
      { ...params(kind, namespace), name },
      options,
    )) as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function createRecord<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  body: T,
): Promise<T> {
  return (await cluster.custom.createNamespacedCustomObject({
    ...params(kind, body.metadata.namespace!),
    body,
  })) as T;
}

/** JSON merge patch of the object (metadata and spec). */
export async function patchRecord<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string,
  name: string,
  patch: Record<string, unknown>,
): Promise<T> {
  const request = { ...params(kind, namespace), name, body: patch };
  return (await cluster.custom.patchNamespacedCustomObject(request, mergePatch())) as T;
}

/**
 * JSON merge patch of the status subresource. With `resourceVersion`, the patch fails with 409
 * when the record changed since it was read at that version (for a list rewritten whole).
 */
export async function patchRecordStatus<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string,
  name: string,
  status: Record<string, unknown>,
  resourceVersion?: string,
): Promise<T> {
  const body = { status, ...(resourceVersion ? { metadata: { resourceVersion } } : {}) };
  const request = { ...params(kind, namespace), name, body };
  return (await cluster.custom.patchNamespacedCustomObjectStatus(request, mergePatch())) as T;
}

/** Deletes a record; NotFound means done. */
export async function deleteRecord(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string,
  name: string,
): Promise<void> {
  try {
    await cluster.custom.deleteNamespacedCustomObject({ ...params(kind, namespace), name });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

export async function listRecords<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string,
  labelSelector?: string,
): Promise<T[]> {
  const list = (await cluster.custom.listNamespacedCustomObject({
    ...params(kind, namespace),
    labelSelector,
  })) as { items: T[] };
  return ownedOf(cluster, kind, list.items);
}

/** Records of a kind in one namespace, or in all namespaces when `namespace` is undefined. */
export async function listRecordsAnywhere<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string | undefined,
  labelSelector?: string,
): Promise<T[]> {
  if (namespace) return listRecords<T>(cluster, kind, namespace, labelSelector);
  const list = (await cluster.custom.listCustomObjectForAllNamespaces({
    group: kind.group,
    version: kind.version,
    plural: kind.plural,
    labelSelector,
  })) as { items: T[] };
  return ownedOf(cluster, kind, list.items);
}

/** One JSON Patch (RFC 6902) operation. */
export interface JsonPatchOperation {
  readonly op: 'add' | 'replace' | 'remove' | 'test';
  readonly path: string;
  readonly value?: unknown;
}

/** Escapes a key for a JSON Pointer path (`/` and `~`). */
export const pointerKey = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** JSON Patch of the object: applied atomically by the apiserver. */
export async function jsonPatchRecord<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string,
  name: string,
  operations: readonly JsonPatchOperation[],
): Promise<T> {
  return (await cluster.custom.patchNamespacedCustomObject(
    { ...params(kind, namespace), name, body: operations },
    setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
  )) as T;
}

/** One page of a list: the items and the `continue` token of the next page (absent on the last). */
export interface RecordPage<T> {
  readonly items: T[];
  readonly continue?: string;
  /** The list's resourceVersion: every page of a list has its first page's, where a watch goes on from. */
  readonly resourceVersion?: string;
}

/** What a page of a list asks for. */
export interface PageQuery {
  readonly labelSelector?: string;
  readonly limit?: number;
  readonly continue?: string;
  /** Only each record's metadata (its kind `PartialObjectMetadata`): a fraction of the bytes. */
  readonly metadataOnly?: boolean;
}

/**
 * One page of the records of a kind, in one namespace or (without one) in all, selected by
 * labels; `limit` and `continue` are the apiserver's list paging, passed through.
 */
export async function listRecordPage<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string | undefined,
  query: PageQuery,
): Promise<RecordPage<T>> {
  const paging = {
    ...(query.labelSelector ? { labelSelector: query.labelSelector } : {}),
    ...(query.limit ? { limit: query.limit } : {}),
    ...(query.continue ? { _continue: query.continue } : {}),
  };
  const options = query.metadataOnly ? metadataOnly() : undefined;
  const list = (
    namespace
      ? await cluster.custom.listNamespacedCustomObject({ ...params(kind, namespace), ...paging }, options)
      : await cluster.custom.listClusterCustomObject(
          { group: kind.group, version: kind.version, plural: kind.plural, ...paging },
          options,
        )
  ) as { items: T[] | null; metadata?: { continue?: string; resourceVersion?: string } };
  const next = list.metadata?.continue;
  const version = list.metadata?.resourceVersion;
  return {
    items: ownedOf(cluster, kind, list.items ?? []),
    ...(next ? { continue: next } : {}),
    ...(version ? { resourceVersion: version } : {}),
  };
}

/** Records a count reads at once: what it holds in memory, whatever the number of records. */
export const COUNT_PAGE_SIZE = 500;

/**
 * Hands each record of a kind, in one namespace or (without one) in all, selected by labels, to
 * `visit`, a page ({@link COUNT_PAGE_SIZE}) at a time: many thousands of records are read without
 * ever holding them all in memory.
 */
export async function forEachRecord<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string | undefined,
  labelSelector: string,
  visit: (record: T) => void,
  pageSize = COUNT_PAGE_SIZE,
  metadataOnly = false,
): Promise<void> {
  let next: string | undefined;
  do {
    const page: RecordPage<T> = await listRecordPage<T>(cluster, kind, namespace, {
      labelSelector,
      limit: pageSize,
      ...(next ? { continue: next } : {}),
      ...(metadataOnly ? { metadataOnly } : {}),
    });
    for (const record of page.items) visit(record);
    next = page.continue;
  } while (next);
}

/**
 * How many records of a kind, in one namespace or (without one) in all, selected by labels, pass
 * `counts` (all by default), read as {@link forEachRecord} reads them: without `counts`, only their
 * metadata is read.
 */
export async function countRecords<T extends KubeObject>(
  cluster: ClusterClient,
  kind: ResourceKind,
  namespace: string | undefined,
  labelSelector: string,
  counts?: (record: T) => boolean,
  pageSize = COUNT_PAGE_SIZE,
): Promise<number> {
  let total = 0;
  await forEachRecord<T>(
    cluster,
    kind,
    namespace,
    labelSelector,
    (record) => void ((!counts || counts(record)) && (total += 1)),
    pageSize,
    counts === undefined,
  );
  return total;
}

/** A write of a custom object: its kind's plural, its namespace (none when cluster-scoped) and name. */
export interface CustomObjectWrite {
  readonly plural: string;
  readonly namespace?: string;
  readonly name: string;
}

/** The requests of the custom objects API that write. */
const WRITES = /^(create|patch|replace|delete)/;

/**
 * `cluster`, telling `heard` of each write of a custom object made through it (create, patch,
 * replace, delete) once the write ended, whether it succeeded or not: a write that failed may have
 * landed all the same.
 */
export function hearingCustomWrites(
  cluster: ClusterClient,
  heard: (write: CustomObjectWrite) => void,
): ClusterClient {
  type Request = {
    plural?: string;
    namespace?: string;
    name?: string;
    body?: { metadata?: { name?: string } };
  };
  const custom = new Proxy(cluster.custom, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string' || !WRITES.test(property)) return value;
      return async (request: Request, ...rest: unknown[]) => {
        try {
          return await (value as (...args: unknown[]) => Promise<unknown>).call(target, request, ...rest);
        } finally {
          const name = request?.name ?? request?.body?.metadata?.name;
          if (request?.plural && name)
            heard({
              plural: request.plural,
              name,
              ...(request.namespace ? { namespace: request.namespace } : {}),
            });
        }
      };
    },
  });
  return { ...cluster, custom };
}
