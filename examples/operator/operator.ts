/**
 * An example operator that reconciles `acid.zalan.do/v1` `postgresql` resources the way Zalando's
 * postgres-operator appears from outside, so the design document's PostgreSQL plan runs end to end
 * without it. It runs no database: it only produces the objects and the status that the plan's
 * `sources` and `status` templates read.
 *
 * For each postgresql of each cluster (all namespaces):
 * - a new postgresql is `Creating`, a changed one (new `metadata.generation`) `Updating`;
 * - `readyAfterMs` after the operator first saw that generation, it ensures one credentials Secret
 *   per user of `spec.users` (`<user>.<cluster>.credentials.postgresql.acid.zalan.do`, with `username`
 *   and a random `password` that is generated once and never replaced), deletes the Secrets of users
 *   no longer listed, ensures a ClusterIP Service named like the postgresql (port 5432), and then sets
 *   `status.PostgresClusterStatus: Running` with `status.observedGeneration`;
 * - a postgresql with `spec.teamId: fail` or the annotation `example-operator/fail: "true"` ends in
 *   `CreateFailed` (`UpdateFailed` after a change) with `status.reason` instead, for tests.
 *
 * A backup, as the plan's custom action `x-backup` asks for it: the annotation
 * `example-operator/backup` on a Running postgresql holds a request (JSON: `id`, and optionally
 * `label` and `delayMs`). After `delayMs` (else `readyAfterMs`) the operator writes a ConfigMap
 * `<cluster>-backup-<id>` with what it "backed up" (the users and the spec), owned by the
 * postgresql, and sets `status.backup` (`request`: the annotation as it was, `state`: `InProgress`,
 * `Succeeded` or `Failed`, `configMap`, `reason`). A request labelled `fail` fails, for tests.
 * A backup holds the data marker's data (the ConfigMap `<cluster>-data`, made empty with the users'
 * Secrets and never changed by the operator; tests write keys into it as rows into a database) and
 * each user's password, in a Secret of the same name. With a backup store, every backup is also
 * kept there, by the postgresql's namespace and name and the backup's id.
 *
 * A restore, as the plan's custom action `x-restore` asks for it: the annotation
 * `example-operator/restore` holds a request (JSON: `id`, `backup`, and optionally `label` and
 * `delayMs`). After the delay the operator finds the backup `backup` of the postgresql of the same
 * namespace and name (in the backup store when there is one, so a postgresql on another cluster can
 * be restored; else beside the postgresql), replaces the data marker's data with the backup's, sets
 * each backed-up user's password, and sets `status.restore` (`request`, `state`, `backup`,
 * `reason`, `restoredAt`).
 *
 * Deletion needs no finalizer: every Secret and Service carries an ownerReference to its postgresql,
 * so the garbage collector (kube-controller-manager) removes them with it. For tests that want to see
 * a postgresql "being deleted", the annotation `example-operator/slow-delete: "<ms>"` ("true" means
 * 3000) makes the operator hold the finalizer `example-operator/slow-delete` for that long after the
 * deletion was requested.
 *
 * Level-based, like a controller-runtime controller: per cluster, reflectors (list + watch) keep
 * caches of the postgresqls and of the Secrets, Services and ConfigMaps labelled `application: spilo`; any change
 * to a postgresql or to one of its objects queues the postgresql's key, and a reconcile reads only
 * the caches and the clock, then converges. Running it twice changes nothing. Every `resyncMs` all
 * known postgresqls are queued again, so nothing depends on having seen a particular event.
 */
import { createHash, randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import {
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1Secret,
  type V1Service,
} from '@kubernetes/client-node';
import type { ClusterClient } from '../../src/kube/clients.js';
import { apiMessageOf, isAlreadyExists, isNotFound, statusCodeOf } from '../../src/kube/errors.js';
import { Reflector, type ReflectorList } from './reflector.js';

export interface ExampleOperatorOptions {
  /** The clusters to reconcile in; each gets its own watches. */
  readonly clusters: readonly ClusterClient[];
  /** Delay from the operator first seeing a generation of a postgresql to Running. @default 1000 */
  readonly readyAfterMs?: number;
  /**
   * Period after which every known postgresql is reconciled again from the caches (no API reads,
   * writes only where something differs). @default 30000
   */
  readonly resyncMs?: number;
  /** Receives one line per state change and per failure. @default no logging */
  readonly log?: (message: string) => void;
  /**
   * Where every successful backup is also kept, so that a postgresql of the same namespace and name
   * on another cluster can be restored from it (even when the source cluster is gone): a
   * ConfigMap and a Secret named {@link storedBackupName} in `namespace` of `cluster` (the
   * namespace is made when missing). A restore then reads its backup there, and only there.
   * @default none: backups stay beside their postgresql, and a restore reads them there
   */
  readonly backupStore?: BackupStore;
}

/** A namespace of one cluster that keeps copies of the backups of every cluster. */
export interface BackupStore {
  readonly cluster: ClusterClient;
  readonly namespace: string;
}

/** A running example operator. */
export interface ExampleOperator {
  /** Stops watching and reconciling; resolves when in-flight work is done. */
  stop(): Promise<void>;
}

/** The API of the resource, as the real operator's CRD defines it. */
export const POSTGRESQL = {
  group: 'acid.zalan.do',
  version: 'v1',
  apiVersion: 'acid.zalan.do/v1',
  kind: 'postgresql',
  plural: 'postgresqls',
} as const;

/** Annotation that makes the operator fail the postgresql (as does `spec.teamId: fail`). */
export const FAIL_ANNOTATION = 'example-operator/fail';
/** Annotation holding a backup request: JSON with `id`, and optionally `label` and `delayMs`. */
export const BACKUP_ANNOTATION = 'example-operator/backup';
/** The label of a backup request that makes the operator fail the backup. */
export const FAILING_BACKUP_LABEL = 'fail';

/** Annotation holding a restore request: JSON with `id`, `backup`, and optionally `label` and `delayMs`. */
export const RESTORE_ANNOTATION = 'example-operator/restore';
/** The label of a restore request that makes the operator fail the restore. */
export const FAILING_RESTORE_LABEL = 'fail';

/**
 * Name of the ConfigMap a backup writes beside its postgresql, for the request `id` of the
 * postgresql `cluster`; the passwords go to a Secret of the same name.
 */
export const backupConfigMapName = (cluster: string, id: string): string =>
  `${cluster}-backup-${id.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`.slice(0, 253).replace(/-+$/, '');

/**
 * Name of the ConfigMap (and the Secret beside it) that keeps the backup `id` of the postgresql
 * `namespace/cluster` in the backup store: the three, lowercased with every other character than
 * letters, digits and `-` turned into `-`, joined by `.`, cut to fit, then `-` and the first 10 hex
 * digits of the SHA-256 of `namespace/cluster/id`, so that names that read alike stay apart. A DNS
 * subdomain of at most 253 characters.
 */
export function storedBackupName(namespace: string, cluster: string, id: string): string {
  const hash = createHash('sha256').update(`${namespace}/${cluster}/${id}`).digest('hex').slice(0, 10);
  const part = (s: string) =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .replace(/^-+|-+$/g, '');
  const readable = [namespace, cluster, id]
    .map(part)
    .filter((p) => p !== '')
    .join('.')
    .slice(0, 253 - hash.length - 1)
    .replace(/[-.]+$/, '');
  return readable === '' ? hash : `${readable}-${hash}`;
}

/**
 * Name of the ConfigMap that stands for the data of the postgresql `cluster`: made empty with the
 * users' Secrets, never changed by the operator but by a restore; tests write keys into it, as
 * rows into a database.
 */
export const dataConfigMapName = (cluster: string): string => `${cluster}-data`;

/** Annotation whose value (milliseconds, or "true") makes deletion wait that long. */
export const SLOW_DELETE_ANNOTATION = 'example-operator/slow-delete';
/** The finalizer held for slow deletes. */
export const SLOW_DELETE_FINALIZER = 'example-operator/slow-delete';

/** Name of the credentials Secret of `user` of the postgresql `cluster`, as the real operator names it. */
export const credentialsSecretName = (user: string, cluster: string): string =>
  `${user.replace(/_/g, '-')}.${cluster}.credentials.postgresql.acid.zalan.do`;

/** The PostgreSQL role name of a user: characters other than letters, digits and `_` become `_`. */
export const roleName = (user: string): string => user.replace(/[^a-zA-Z0-9_]/g, '_');

interface Postgresql {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion?: string;
    generation?: number;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  spec?: { teamId?: unknown; users?: unknown };
  status?: {
    PostgresClusterStatus?: string;
    observedGeneration?: number;
    reason?: string;
    backup?: BackupStatus;
    restore?: RestoreStatus;
  };
}

/** What the operator says of the last backup request of a postgresql. */
export interface BackupStatus {
  /** The request, the annotation's value as it was when the operator took it up. */
  request?: string;
  state?: 'InProgress' | 'Succeeded' | 'Failed';
  /** The ConfigMap holding the backup, once it succeeded. */
  configMap?: string;
  reason?: string;
  takenAt?: string;
}

/** What the operator says of the last restore request of a postgresql. */
export interface RestoreStatus {
  /** The request, the annotation's value as it was when the operator took it up. */
  request?: string;
  state?: 'InProgress' | 'Succeeded' | 'Failed';
  /** The id of the backup restored, once it succeeded. */
  backup?: string;
  reason?: string;
  restoredAt?: string;
}

/** A backup request, as the annotation holds it. */
interface BackupRequest {
  readonly id: string;
  readonly label?: string;
  readonly delayMs?: number;
}

/** A restore request, as the annotation holds it: `backup` is the id of the backup's request. */
interface RestoreRequest extends BackupRequest {
  readonly backup: string;
}

/** What a backup holds, wherever it is kept. */
interface Backup {
  readonly request: string;
  readonly takenAt: string;
  readonly label?: string;
  readonly users: readonly string[];
  readonly spec: unknown;
  /** The data ConfigMap's `data` when the backup was taken. */
  readonly data: Record<string, string>;
  /** The password of each user that had a credentials Secret, by user name. */
  readonly passwords: Record<string, string>;
}

interface Owned {
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    ownerReferences?: { uid: string; kind: string }[];
  };
}

/** Labels of the objects the real operator creates for a cluster. */
const OWNED_SELECTOR = 'application=spilo,cluster-name';
const DEFAULT_SLOW_DELETE_MS = 3000;

export async function startExampleOperator(options: ExampleOperatorOptions): Promise<ExampleOperator> {
  const log = options.log ?? (() => undefined);
  const abort = new AbortController();
  // Every reflector and every open watch listens for the stop.
  setMaxListeners(0, abort.signal);
  const controllers = options.clusters.map(
    (cluster) =>
      new ClusterController(cluster, {
        readyAfterMs: options.readyAfterMs ?? 1000,
        resyncMs: options.resyncMs ?? 30_000,
        log,
        signal: abort.signal,
        ...(options.backupStore ? { backupStore: options.backupStore } : {}),
      }),
  );
  const runs = controllers.map((c) => c.run());
  return {
    stop: async () => {
      abort.abort();
      await Promise.all(runs);
    },
  };
}

interface Seen {
  readonly uid: string;
  readonly generation: number;
  readonly since: number;
  deletingSince?: number;
}

interface ControllerSettings {
  readonly readyAfterMs: number;
  readonly resyncMs: number;
  readonly log: (message: string) => void;
  readonly signal: AbortSignal;
  readonly backupStore?: BackupStore;
}

/** The operator for one cluster: four reflectors, a work queue of keys, and timers. */
class ClusterController {
  private readonly postgresqls: Reflector<Postgresql>;
  private readonly secrets: Reflector<Owned>;
  private readonly services: Reflector<Owned>;
  private readonly configMaps: Reflector<Owned>;
  /** Keys being reconciled; `again` asks for another pass after the current one. */
  private readonly queue = new Map<string, { again: boolean }>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  /** When the current generation (and the deletion) of each postgresql was first seen, by key. */
  private readonly seen = new Map<string, Seen>();
  /** When each postgresql's current backup request was first seen, by key. */
  private readonly backupsSeen = new Map<string, { request: string; since: number }>();
  /** When each postgresql's current restore request was first seen, by key. */
  private readonly restoresSeen = new Map<string, { request: string; since: number }>();
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly cluster: ClusterClient,
    private readonly settings: ControllerSettings,
  ) {
    const common = {
      kubeConfig: cluster.kubeConfig,
      signal: settings.signal,
      log: settings.log,
    };
    this.postgresqls = new Reflector<Postgresql>({
      ...common,
      name: `postgresqls in cluster ${cluster.id}`,
      path: `/apis/${POSTGRESQL.group}/${POSTGRESQL.version}/${POSTGRESQL.plural}`,
      list: async () =>
        (await cluster.custom.listClusterCustomObject({
          group: POSTGRESQL.group,
          version: POSTGRESQL.version,
          plural: POSTGRESQL.plural,
        })) as ReflectorList<Postgresql>,
      onChange: (key) => this.enqueue(key),
    });
    // A change to an owned object (a deletion included) queues its postgresql.
    const enqueueOwner = (current: Owned | undefined, previous: Owned | undefined) => {
      const obj = current ?? previous;
      const cluster = obj?.metadata?.labels?.['cluster-name'];
      if (obj?.metadata?.namespace && cluster) this.enqueue(`${obj.metadata.namespace}/${cluster}`);
    };
    this.secrets = new Reflector<Owned>({
      ...common,
      name: `secrets in cluster ${cluster.id}`,
      path: '/api/v1/secrets',
      labelSelector: OWNED_SELECTOR,
      list: () =>
        cluster.core.listSecretForAllNamespaces({ labelSelector: OWNED_SELECTOR }) as Promise<
          ReflectorList<Owned>
        >,
      onChange: (_key, current, previous) => enqueueOwner(current, previous),
    });
    this.services = new Reflector<Owned>({
      ...common,
      name: `services in cluster ${cluster.id}`,
      path: '/api/v1/services',
      labelSelector: OWNED_SELECTOR,
      list: () =>
        cluster.core.listServiceForAllNamespaces({ labelSelector: OWNED_SELECTOR }) as Promise<
          ReflectorList<Owned>
        >,
      onChange: (_key, current, previous) => enqueueOwner(current, previous),
    });
    this.configMaps = new Reflector<Owned>({
      ...common,
      name: `configmaps in cluster ${cluster.id}`,
      path: '/api/v1/configmaps',
      labelSelector: OWNED_SELECTOR,
      list: () =>
        cluster.core.listConfigMapForAllNamespaces({ labelSelector: OWNED_SELECTOR }) as Promise<
          ReflectorList<Owned>
        >,
      onChange: (_key, current, previous) => enqueueOwner(current, previous),
    });
  }

  async run(): Promise<void> {
    const { signal, resyncMs } = this.settings;
    const reflectors = [this.postgresqls, this.secrets, this.services, this.configMaps].map((r) => r.run());
    const resync = setInterval(() => {
      for (const key of this.postgresqls.store.keys()) this.enqueue(key);
    }, resyncMs);
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    clearInterval(resync);
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(reflectors);
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  // ---- the work queue ------------------------------------------------------------------------

  private enqueue(key: string): void {
    if (this.settings.signal.aborted) return;
    const pending = this.queue.get(key);
    if (pending) {
      pending.again = true;
      return;
    }
    const entry = { again: false };
    this.queue.set(key, entry);
    const work = (async () => {
      // Let a burst of events (a relist, a status patch and its echo) coalesce into one pass.
      await Promise.resolve();
      do {
        entry.again = false;
        await this.reconcileSafely(key);
      } while (entry.again && !this.settings.signal.aborted);
      this.queue.delete(key);
    })();
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  /** Queues `key` again after `ms`, keeping an earlier timer when there is one. */
  private requeueAfter(key: string, ms: number): void {
    if (this.settings.signal.aborted) return;
    const at = Date.now() + ms;
    const current = this.timers.get(key);
    if (current && current.at <= at) return;
    if (current) clearTimeout(current.timer);
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        this.enqueue(key);
      },
      Math.max(0, ms),
    );
    this.timers.set(key, { at, timer });
  }

  private async reconcileSafely(key: string): Promise<void> {
    try {
      await this.reconcile(key);
      this.failures.delete(key);
    } catch (err) {
      if (this.settings.signal.aborted) return;
      // NotFound: the postgresql or its namespace went while we worked; the watch reports it.
      if (isNotFound(err)) return;
      const n = this.failures.get(key) ?? 0;
      this.failures.set(key, n + 1);
      const delay = Math.min(10_000, 200 * 2 ** n);
      this.settings.log(
        `postgresql ${key} in cluster ${this.cluster.id}: ${apiMessageOf(err)}; retrying in ${delay} ms`,
      );
      this.requeueAfter(key, delay);
    }
  }

  // ---- reconcile -----------------------------------------------------------------------------

  private async reconcile(key: string): Promise<void> {
    const pg = this.postgresqls.store.get(key);
    if (!pg) {
      // Gone: the garbage collector removes what it owned. Forget our bookkeeping.
      this.seen.delete(key);
      this.backupsSeen.delete(key);
      this.restoresSeen.delete(key);
      const timer = this.timers.get(key);
      if (timer) clearTimeout(timer.timer);
      this.timers.delete(key);
      this.failures.delete(key);
      return;
    }
    if (pg.metadata.deletionTimestamp) return this.reconcileDeletion(key, pg);
    if (slowDeleteMs(pg) !== undefined && !pg.metadata.finalizers?.includes(SLOW_DELETE_FINALIZER)) {
      return this.setFinalizers(pg, [...(pg.metadata.finalizers ?? []), SLOW_DELETE_FINALIZER]);
    }

    const generation = pg.metadata.generation ?? 1;
    const status = pg.status ?? {};
    if (status.observedGeneration === generation) {
      // Settled for this generation; keep a Running postgresql's objects in place (level-based).
      if (status.PostgresClusterStatus === 'Running') {
        await this.ensureObjects(pg);
        await this.reconcileBackup(key, pg);
        await this.reconcileRestore(key, pg);
      }
      return;
    }

    const since = this.firstSeen(key, pg).since;
    const updating = status.observedGeneration !== undefined;
    const wait = since + this.settings.readyAfterMs - Date.now();
    if (wait > 0) {
      const phase = updating ? 'Updating' : 'Creating';
      if (status.PostgresClusterStatus !== phase) {
        await this.patchStatus(pg, { PostgresClusterStatus: phase, reason: null });
        this.settings.log(`postgresql ${key} in cluster ${this.cluster.id}: ${phase}`);
      }
      this.requeueAfter(key, wait);
      return;
    }

    const failure = failureOf(pg);
    if (failure) {
      const phase = updating ? 'UpdateFailed' : 'CreateFailed';
      await this.patchStatus(pg, {
        PostgresClusterStatus: phase,
        reason: failure,
        observedGeneration: generation,
      });
      this.settings.log(`postgresql ${key} in cluster ${this.cluster.id}: ${phase}: ${failure}`);
      return;
    }

    let problem: string | undefined;
    try {
      problem = await this.ensureObjects(pg);
    } catch (err) {
      // The apiserver refuses the objects (422): nothing to retry until the spec changes.
      if (statusCodeOf(err) !== 422) throw err;
      const phase = updating ? 'UpdateFailed' : 'CreateFailed';
      const reason = plainReason(apiMessageOf(err));
      await this.patchStatus(pg, { PostgresClusterStatus: phase, reason, observedGeneration: generation });
      this.settings.log(`postgresql ${key} in cluster ${this.cluster.id}: ${phase}: ${reason}`);
      return;
    }
    if (problem) {
      this.settings.log(`postgresql ${key} in cluster ${this.cluster.id}: ${problem}`);
      this.requeueAfter(key, 1000);
      return;
    }
    await this.patchStatus(pg, {
      PostgresClusterStatus: 'Running',
      reason: null,
      observedGeneration: generation,
    });
    this.settings.log(`postgresql ${key} in cluster ${this.cluster.id}: Running`);
  }

  /**
   * Ensures the Secrets of the listed users and the Service, and deletes the Secrets of users no
   * longer listed. Returns why it cannot finish yet (an object of that name still belongs to an
   * earlier postgresql of the same name, which the garbage collector is about to remove).
   */
  private async ensureObjects(pg: Postgresql): Promise<string | undefined> {
    const { name, namespace, uid } = pg.metadata;
    const owner = {
      apiVersion: POSTGRESQL.apiVersion,
      kind: POSTGRESQL.kind,
      name,
      uid,
      controller: true,
      blockOwnerDeletion: true,
    };
    const teamId = typeof pg.spec?.teamId === 'string' ? pg.spec.teamId : '';
    const labels = { application: 'spilo', 'cluster-name': name, team: teamId };
    const users = usersOf(pg);
    const wanted = new Set(users.map((user) => credentialsSecretName(user, name)));
    const problems: string[] = [];

    // Owned by another postgresql of this name (deleted, not yet collected) and not by this one.
    const foreign = (obj: Owned | undefined) => {
      const owners = obj?.metadata?.ownerReferences ?? [];
      return (
        owners.some((o) => o.kind === POSTGRESQL.kind && o.uid !== uid) && !owners.some((o) => o.uid === uid)
      );
    };

    for (const user of users) {
      const secretName = credentialsSecretName(user, name);
      const cached = this.secrets.store.get(`${namespace}/${secretName}`);
      if (cached) {
        if (foreign(cached)) problems.push(`Secret ${secretName} still belongs to an earlier postgresql`);
        continue;
      }
      const body: V1Secret = {
        metadata: { name: secretName, namespace, labels, ownerReferences: [owner] },
        type: 'Opaque',
        // Generated once: an existing Secret is never replaced, so its password never changes.
        stringData: { username: roleName(user), password: randomBytes(24).toString('base64url') },
      };
      try {
        await this.cluster.core.createNamespacedSecret({ namespace, body });
        this.settings.log(
          `postgresql ${namespace}/${name} in cluster ${this.cluster.id}: created Secret ${secretName}`,
        );
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        // Our cache is behind; the existing Secret stays as it is. Check whose it is.
        const existing = await this.cluster.core.readNamespacedSecret({ namespace, name: secretName });
        if (foreign(existing as Owned))
          problems.push(`Secret ${secretName} still belongs to an earlier postgresql`);
      }
    }

    const suffix = `.${name}.credentials.postgresql.acid.zalan.do`;
    const unwanted = [...this.secrets.store]
      .filter(
        ([key, secret]) =>
          key.startsWith(`${namespace}/`) && secret.metadata?.labels?.['cluster-name'] === name,
      )
      .map(([, secret]) => secret.metadata?.name ?? '')
      .filter((secretName) => secretName.endsWith(suffix) && !wanted.has(secretName));
    if (unwanted.length > 0) {
      // Deleting loses a password for good: decide on the postgresql as it is now, not as cached.
      const fresh = (await this.cluster.custom.getNamespacedCustomObject({
        group: POSTGRESQL.group,
        version: POSTGRESQL.version,
        plural: POSTGRESQL.plural,
        namespace,
        name,
      })) as Postgresql;
      const stillWanted = new Set(usersOf(fresh).map((user) => credentialsSecretName(user, name)));
      for (const secretName of unwanted) {
        if (fresh.metadata.uid !== uid || stillWanted.has(secretName)) continue;
        try {
          await this.cluster.core.deleteNamespacedSecret({ namespace, name: secretName });
          this.settings.log(
            `postgresql ${namespace}/${name} in cluster ${this.cluster.id}: deleted Secret ${secretName}`,
          );
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
    }

    const service = this.services.store.get(`${namespace}/${name}`);
    if (service) {
      if (foreign(service)) problems.push(`Service ${name} still belongs to an earlier postgresql`);
    } else {
      const body: V1Service = {
        metadata: { name, namespace, labels, ownerReferences: [owner] },
        spec: { type: 'ClusterIP', ports: [{ name: 'postgresql', port: 5432, targetPort: 5432 }] },
      };
      try {
        await this.cluster.core.createNamespacedService({ namespace, body });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        const existing = await this.cluster.core.readNamespacedService({ namespace, name });
        if (foreign(existing as Owned))
          problems.push(`Service ${name} still belongs to an earlier postgresql`);
      }
    }

    // The data marker: made empty, and its data left to whoever writes it (the tests, a restore).
    const dataName = dataConfigMapName(name);
    const data = this.configMaps.store.get(`${namespace}/${dataName}`);
    if (data) {
      if (foreign(data)) problems.push(`ConfigMap ${dataName} still belongs to an earlier postgresql`);
    } else {
      const body: V1ConfigMap = {
        metadata: {
          name: dataName,
          namespace,
          labels: { application: 'spilo', 'cluster-name': name },
          ownerReferences: [owner],
        },
        data: {},
      };
      try {
        await this.cluster.core.createNamespacedConfigMap({ namespace, body });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        const existing = await this.cluster.core.readNamespacedConfigMap({ namespace, name: dataName });
        if (foreign(existing as Owned))
          problems.push(`ConfigMap ${dataName} still belongs to an earlier postgresql`);
      }
    }
    return problems.length > 0 ? `waiting: ${problems.join('; ')}` : undefined;
  }

  /**
   * Takes the backup the annotation asks for, once per request: in progress for its delay, then a
   * ConfigMap with the backup and `status.backup` Succeeded (or Failed, for a request labelled
   * `fail` or one that is not JSON with an id).
   */
  private async reconcileBackup(key: string, pg: Postgresql): Promise<void> {
    const request = pg.metadata.annotations?.[BACKUP_ANNOTATION];
    const current = pg.status?.backup;
    if (!request || (current?.request === request && current.state !== 'InProgress')) return;
    const where = `postgresql ${key} in cluster ${this.cluster.id}`;
    const parsed = backupRequestOf(request);
    if (typeof parsed === 'string') {
      await this.patchStatus(pg, { backup: { request, state: 'Failed', reason: parsed, configMap: null } });
      this.settings.log(`${where}: backup failed: ${parsed}`);
      return;
    }
    let seen = this.backupsSeen.get(key);
    if (seen?.request !== request) {
      seen = { request, since: Date.now() };
      this.backupsSeen.set(key, seen);
    }
    const wait = seen.since + (parsed.delayMs ?? this.settings.readyAfterMs) - Date.now();
    if (wait > 0) {
      if (current?.request !== request) {
        await this.patchStatus(pg, {
          backup: { request, state: 'InProgress', reason: null, configMap: null, takenAt: null },
        });
        this.settings.log(`${where}: backup ${parsed.id} in progress`);
      }
      this.requeueAfter(key, wait);
      return;
    }
    if (parsed.label === FAILING_BACKUP_LABEL) {
      const reason = plainReason(
        `the example operator was told to fail this backup (label ${FAILING_BACKUP_LABEL})`,
      );
      await this.patchStatus(pg, { backup: { request, state: 'Failed', reason, configMap: null } });
      this.settings.log(`${where}: backup ${parsed.id} failed: ${reason}`);
      return;
    }
    const { name, namespace } = pg.metadata;
    const configMap = backupConfigMapName(name, parsed.id);
    const backup = await this.takeBackup(pg, configMap, request, parsed.label);
    const store = this.settings.backupStore;
    if (store) await keepInStore(store, namespace, name, parsed.id, backup);
    await this.patchStatus(pg, {
      backup: { request, state: 'Succeeded', reason: null, configMap, takenAt: backup.takenAt },
    });
    this.settings.log(
      `${where}: backup ${parsed.id} taken in ConfigMap ${configMap}` +
        (store ? ` and kept in namespace ${store.namespace} of cluster ${store.cluster.id}` : ''),
    );
  }

  /**
   * Takes a backup beside the postgresql: the ConfigMap `name` (owned by the postgresql) with the
   * request, the users, the spec and the data marker's data, and the Secret `name` with the
   * users' passwords. A backup taken before under that name (its status patch was lost) is kept,
   * and returned as it was taken.
   */
  private async takeBackup(pg: Postgresql, name: string, request: string, label?: string): Promise<Backup> {
    const { namespace } = pg.metadata;
    const metadata = {
      name,
      namespace,
      labels: { application: 'spilo-backup', 'cluster-name': pg.metadata.name },
      ownerReferences: [
        {
          apiVersion: POSTGRESQL.apiVersion,
          kind: POSTGRESQL.kind,
          name: pg.metadata.name,
          uid: pg.metadata.uid,
        },
      ],
    };
    const passwords = await this.passwordsOf(pg);
    let backup: Backup = {
      request,
      takenAt: new Date().toISOString(),
      ...(label ? { label } : {}),
      users: usersOf(pg),
      spec: pg.spec ?? {},
      data: await this.dataOf(pg),
      passwords,
    };
    try {
      await this.cluster.core.createNamespacedConfigMap({
        namespace,
        body: { metadata, data: backupConfigMapData(backup) },
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const taken = await this.cluster.core.readNamespacedConfigMap({ namespace, name });
      const secret = await readOrUndefined(() => this.cluster.core.readNamespacedSecret({ namespace, name }));
      const earlier = backupOf(taken.data ?? {}, secret ? (secret.data ?? {}) : undefined);
      // The Secret may not have been written before: the passwords are the current ones then.
      if (typeof earlier !== 'string') backup = secret ? earlier : { ...earlier, passwords };
    }
    try {
      await this.cluster.core.createNamespacedSecret({
        namespace,
        body: { metadata, type: 'Opaque', data: backupSecretData(backup) },
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    return backup;
  }

  /** The data marker's data as it is now (empty when it is not there). */
  private async dataOf(pg: Postgresql): Promise<Record<string, string>> {
    const { namespace, name } = pg.metadata;
    const marker = await readOrUndefined(() =>
      this.cluster.core.readNamespacedConfigMap({ namespace, name: dataConfigMapName(name) }),
    );
    return { ...(marker?.data ?? {}) };
  }

  /** The password of each user of the spec that has a credentials Secret, read now. */
  private async passwordsOf(pg: Postgresql): Promise<Record<string, string>> {
    const { namespace, name } = pg.metadata;
    const passwords: Record<string, string> = {};
    for (const user of usersOf(pg)) {
      const secret = await readOrUndefined(() =>
        this.cluster.core.readNamespacedSecret({ namespace, name: credentialsSecretName(user, name) }),
      );
      const password = secret?.data?.password;
      if (password !== undefined) passwords[user] = Buffer.from(password, 'base64').toString('utf8');
    }
    return passwords;
  }

  /**
   * Restores the backup the annotation asks for, once per request: in progress for its delay, then
   * the backup of the postgresql's namespace and name with that id (from the backup store when there
   * is one, else from beside the postgresql) written into the data marker and the users' Secrets,
   * and `status.restore` Succeeded (or Failed: a request labelled `fail`, one that is not JSON
   * with an id and a backup, a backup that is not there).
   */
  private async reconcileRestore(key: string, pg: Postgresql): Promise<void> {
    const request = pg.metadata.annotations?.[RESTORE_ANNOTATION];
    const current = pg.status?.restore;
    if (!request || (current?.request === request && current.state !== 'InProgress')) return;
    const where = `postgresql ${key} in cluster ${this.cluster.id}`;
    const fail = async (reason: string) => {
      await this.patchStatus(pg, {
        restore: { request, state: 'Failed', reason, backup: null, restoredAt: null },
      });
      this.settings.log(`${where}: restore failed: ${reason}`);
    };
    const parsed = restoreRequestOf(request);
    if (typeof parsed === 'string') return fail(parsed);
    let seen = this.restoresSeen.get(key);
    if (seen?.request !== request) {
      seen = { request, since: Date.now() };
      this.restoresSeen.set(key, seen);
    }
    const wait = seen.since + (parsed.delayMs ?? this.settings.readyAfterMs) - Date.now();
    if (wait > 0) {
      if (current?.request !== request) {
        await this.patchStatus(pg, {
          restore: { request, state: 'InProgress', reason: null, backup: null, restoredAt: null },
        });
        this.settings.log(`${where}: restore ${parsed.id} of backup ${parsed.backup} in progress`);
      }
      this.requeueAfter(key, wait);
      return;
    }
    if (parsed.label === FAILING_RESTORE_LABEL) {
      return fail(
        plainReason(`the example operator was told to fail this restore (label ${FAILING_RESTORE_LABEL})`),
      );
    }
    const backup = await this.findBackup(pg, parsed.backup);
    if (typeof backup === 'string') return fail(plainReason(backup));
    await this.restoreBackup(pg, backup);
    await this.patchStatus(pg, {
      restore: {
        request,
        state: 'Succeeded',
        reason: null,
        backup: parsed.backup,
        restoredAt: new Date().toISOString(),
      },
    });
    this.settings.log(
      `${where}: restore ${parsed.id} restored backup ${parsed.backup} ` +
        `(${Object.keys(backup.data).length} data keys, the passwords of ${restoredUsers(pg, backup).length} users)`,
    );
  }

  /** The backup `id` of the postgresql's namespace and name, or why there is none. */
  private async findBackup(pg: Postgresql, id: string): Promise<Backup | string> {
    const { namespace, name } = pg.metadata;
    const store = this.settings.backupStore;
    const found = store
      ? { cluster: store.cluster, namespace: store.namespace, name: storedBackupName(namespace, name, id) }
      : { cluster: this.cluster, namespace, name: backupConfigMapName(name, id) };
    const where = store
      ? `in the backup store (namespace ${store.namespace} of cluster ${store.cluster.id})`
      : `beside the postgresql in cluster ${this.cluster.id}`;
    const missing = `backup ${id} of postgresql ${namespace}/${name} not found ${where}`;
    const configMap = await readOrUndefined(() =>
      found.cluster.core.readNamespacedConfigMap({ namespace: found.namespace, name: found.name }),
    );
    if (!configMap) return missing;
    const secret = await readOrUndefined(() =>
      found.cluster.core.readNamespacedSecret({ namespace: found.namespace, name: found.name }),
    );
    const backup = backupOf(configMap.data ?? {}, secret?.data ?? {});
    if (typeof backup === 'string') return `backup ${id} of postgresql ${namespace}/${name}: ${backup}`;
    // Names are cut and hashed: make sure this is the backup asked for.
    const data = configMap.data ?? {};
    const ownId = backupRequestOf(backup.request);
    if (typeof ownId === 'string' || ownId.id !== id) return missing;
    if (store && (data.namespace !== namespace || data.cluster !== name)) return missing;
    return backup;
  }

  /**
   * Writes a backup into the postgresql: the data marker's data replaced by the backup's, and the
   * password of each user of the spec that the backup has set in the user's Secret (made when
   * missing). Users of the backup that the spec no longer lists are left out.
   */
  private async restoreBackup(pg: Postgresql, backup: Backup): Promise<void> {
    const { namespace, name, uid } = pg.metadata;
    const owner = {
      apiVersion: POSTGRESQL.apiVersion,
      kind: POSTGRESQL.kind,
      name,
      uid,
      controller: true,
      blockOwnerDeletion: true,
    };
    const dataName = dataConfigMapName(name);
    try {
      await this.cluster.core.patchNamespacedConfigMap(
        { namespace, name: dataName, body: [{ op: 'add', path: '/data', value: backup.data }] },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.cluster.core.createNamespacedConfigMap({
        namespace,
        body: {
          metadata: {
            name: dataName,
            namespace,
            labels: { application: 'spilo', 'cluster-name': name },
            ownerReferences: [owner],
          },
          data: backup.data,
        },
      });
    }
    const teamId = typeof pg.spec?.teamId === 'string' ? pg.spec.teamId : '';
    for (const user of restoredUsers(pg, backup)) {
      const secretName = credentialsSecretName(user, name);
      const password = backup.passwords[user]!;
      try {
        await this.cluster.core.patchNamespacedSecret(
          {
            namespace,
            name: secretName,
            body: { data: { password: Buffer.from(password, 'utf8').toString('base64') } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await this.cluster.core.createNamespacedSecret({
          namespace,
          body: {
            metadata: {
              name: secretName,
              namespace,
              labels: { application: 'spilo', 'cluster-name': name, team: teamId },
              ownerReferences: [owner],
            },
            type: 'Opaque',
            stringData: { username: roleName(user), password },
          },
        });
      }
    }
  }

  /** Holds the slow-delete finalizer for its time, then lets the deletion finish. */
  private async reconcileDeletion(key: string, pg: Postgresql): Promise<void> {
    if (!pg.metadata.finalizers?.includes(SLOW_DELETE_FINALIZER)) return;
    const seen = this.firstSeen(key, pg);
    seen.deletingSince ??= Date.now();
    const wait = seen.deletingSince + (slowDeleteMs(pg) ?? 0) - Date.now();
    if (wait > 0) {
      this.requeueAfter(key, wait);
      return;
    }
    await this.setFinalizers(
      pg,
      pg.metadata.finalizers.filter((f) => f !== SLOW_DELETE_FINALIZER),
    );
    this.settings.log(`postgresql ${key} in cluster ${this.cluster.id}: released the slow-delete finalizer`);
  }

  /** When this generation of the postgresql was first seen (a new uid or generation starts again). */
  private firstSeen(key: string, pg: Postgresql): Seen {
    const generation = pg.metadata.generation ?? 1;
    const current = this.seen.get(key);
    if (current && current.uid === pg.metadata.uid && current.generation === generation) return current;
    const fresh: Seen = { uid: pg.metadata.uid, generation, since: Date.now() };
    this.seen.set(key, fresh);
    return fresh;
  }

  /** Sets the finalizers, guarded by the resourceVersion we read (409 means: read again, retry). */
  private async setFinalizers(pg: Postgresql, finalizers: string[]): Promise<void> {
    await this.cluster.custom.patchNamespacedCustomObject(
      {
        group: POSTGRESQL.group,
        version: POSTGRESQL.version,
        plural: POSTGRESQL.plural,
        namespace: pg.metadata.namespace,
        name: pg.metadata.name,
        body: { metadata: { finalizers, resourceVersion: pg.metadata.resourceVersion } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  private async patchStatus(pg: Postgresql, status: Record<string, unknown>): Promise<void> {
    await this.cluster.custom.patchNamespacedCustomObjectStatus(
      {
        group: POSTGRESQL.group,
        version: POSTGRESQL.version,
        plural: POSTGRESQL.plural,
        namespace: pg.metadata.namespace,
        name: pg.metadata.name,
        body: { status },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
}

/** The users of `spec.users` (a map of user name to roles); anything else counts as none. */
function usersOf(pg: Postgresql): string[] {
  const users = pg.spec?.users;
  if (typeof users !== 'object' || users === null || Array.isArray(users)) return [];
  return Object.keys(users).sort();
}

/** The backup request an annotation holds, or why it is none. */
function backupRequestOf(text: string): BackupRequest | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return `the backup request is not JSON`;
  }
  const { id, label, delayMs } = (value ?? {}) as Record<string, unknown>;
  if (typeof id !== 'string' || id === '') return 'the backup request has no id';
  const delay = typeof delayMs === 'string' ? Number(delayMs) : delayMs;
  return {
    id,
    ...(typeof label === 'string' && label !== '' ? { label } : {}),
    ...(typeof delay === 'number' && Number.isFinite(delay) && delay >= 0 ? { delayMs: delay } : {}),
  };
}

/** The restore request an annotation holds, or why it is none. */
function restoreRequestOf(text: string): RestoreRequest | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the restore request is not JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return 'the restore request is not a JSON object';
  const { id, backup, label, delayMs } = value as Record<string, unknown>;
  if (typeof id !== 'string' || id === '') return 'the restore request has no id';
  if (typeof backup !== 'string' || backup === '') return 'the restore request names no backup';
  const delay = typeof delayMs === 'string' ? Number(delayMs) : delayMs;
  return {
    id,
    backup,
    ...(typeof label === 'string' && label !== '' ? { label } : {}),
    ...(typeof delay === 'number' && Number.isFinite(delay) && delay >= 0 ? { delayMs: delay } : {}),
  };
}

/** The users whose passwords a restore sets: those of the spec that the backup has a password for. */
function restoredUsers(pg: Postgresql, backup: Backup): string[] {
  return usersOf(pg).filter((user) => Object.hasOwn(backup.passwords, user));
}

/** A backup's ConfigMap data: everything but the passwords. */
function backupConfigMapData(backup: Backup): Record<string, string> {
  return {
    request: backup.request,
    takenAt: backup.takenAt,
    ...(backup.label ? { label: backup.label } : {}),
    users: JSON.stringify(backup.users),
    spec: JSON.stringify(backup.spec),
    data: JSON.stringify(backup.data),
  };
}

/** A backup's Secret data: the passwords by user, one JSON object. */
function backupSecretData(backup: Backup): Record<string, string> {
  return { passwords: Buffer.from(JSON.stringify(backup.passwords), 'utf8').toString('base64') };
}

/** A backup from its ConfigMap's and its Secret's data (no Secret: no passwords), or what is wrong with it. */
function backupOf(
  configMap: Record<string, string>,
  secret: Record<string, string> | undefined,
): Backup | string {
  const { request, takenAt, label } = configMap;
  if (!request || !takenAt) return 'its ConfigMap has no request or takenAt';
  try {
    const users = JSON.parse(configMap.users ?? '[]') as unknown;
    const data = JSON.parse(configMap.data ?? '{}') as unknown;
    const passwords = secret?.passwords
      ? (JSON.parse(Buffer.from(secret.passwords, 'base64').toString('utf8')) as unknown)
      : {};
    if (!Array.isArray(users) || !isStringMap(data) || !isStringMap(passwords))
      return 'its users, data or passwords are not what a backup holds';
    return {
      request,
      takenAt,
      ...(label ? { label } : {}),
      users: users.filter((u): u is string => typeof u === 'string'),
      spec: JSON.parse(configMap.spec ?? '{}') as unknown,
      data,
      passwords,
    };
  } catch {
    // Never the parser's message: it could quote a password.
    return 'its users, spec, data or passwords are not JSON';
  }
}

const isStringMap = (value: unknown): value is Record<string, string> =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  Object.values(value).every((v) => typeof v === 'string');

/**
 * Keeps a copy of the backup `id` of the postgresql `namespace/cluster` in the backup store: a
 * ConfigMap and a Secret named {@link storedBackupName}, the namespace made when missing. A copy
 * already there (the backup was kept before) stays as it is.
 */
async function keepInStore(
  store: BackupStore,
  namespace: string,
  cluster: string,
  id: string,
  backup: Backup,
): Promise<void> {
  const core = store.cluster.core;
  try {
    await core.createNamespace({ body: { metadata: { name: store.namespace } } });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  const metadata = {
    name: storedBackupName(namespace, cluster, id),
    namespace: store.namespace,
    labels: { application: 'spilo-backup-store' },
  };
  try {
    await core.createNamespacedConfigMap({
      namespace: store.namespace,
      body: { metadata, data: { namespace, cluster, id, ...backupConfigMapData(backup) } },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  try {
    await core.createNamespacedSecret({
      namespace: store.namespace,
      body: { metadata, type: 'Opaque', data: backupSecretData(backup) },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

/** What `read` returns, or undefined when the object is not there. */
async function readOrUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Why the test hooks want this postgresql to fail, or undefined. */
function failureOf(pg: Postgresql): string | undefined {
  if (pg.spec?.teamId === 'fail') return 'the example operator was told to fail this cluster (team fail)';
  if (pg.metadata.annotations?.[FAIL_ANNOTATION] === 'true') {
    return `the example operator was told to fail this cluster (annotation ${FAIL_ANNOTATION})`;
  }
  return undefined;
}

/**
 * A reason that stays one plain YAML scalar: the design document's status template writes
 * `description: {{ .postgresql.status.reason }}` unquoted, so quotes, `: ` and `#` would break it.
 */
export function plainReason(text: string): string {
  return text
    .replace(/[\r\n\t]+/g, ' ')
    .replace(/["'`]/g, '')
    .replace(/:(\s|$)/g, ' -$1')
    .replace(/\s#/g, ' ')
    .replace(/^[-?:,[\]{}#&*!|>%@\s]+/, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** How long a deletion is held, or undefined when the postgresql does not ask for it. */
function slowDeleteMs(pg: Postgresql): number | undefined {
  const value = pg.metadata.annotations?.[SLOW_DELETE_ANNOTATION];
  if (value === undefined || value === 'false') return undefined;
  if (value === 'true' || value === '') return DEFAULT_SLOW_DELETE_MS;
  const ms = Number(value);
  return Number.isFinite(ms) && ms >= 0 ? ms : DEFAULT_SLOW_DELETE_MS;
}
