/**
 * The example operator against the real apiservers: what a user of Zalando's postgres-operator sees
 * (status, credentials Secrets, the Service, the data marker), in the master and in a sister
 * cluster, through creation, user changes, failure and deletion (with the garbage collector of the
 * controller managers removing the owned objects); and a backup on one cluster restored into a
 * postgresql of the same name on another, through the backup store on the master.
 */
import { PatchStrategy, setHeaderOptions, type V1Secret } from '@kubernetes/client-node';
import {
  BACKUP_ANNOTATION,
  POSTGRESQL,
  RESTORE_ANNOTATION,
  SLOW_DELETE_FINALIZER,
  backupConfigMapName,
  credentialsSecretName,
  dataConfigMapName,
  startExampleOperator,
  storedBackupName,
  type BackupStatus,
  type ExampleOperator,
  type RestoreStatus,
} from '../../examples/operator/operator.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { isNotFound } from '../../src/kube/errors.js';
import { clusters, eventually, unique, untilGone } from '../support/env.js';

interface Postgresql {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation: number;
    deletionTimestamp?: string;
    finalizers?: string[];
  };
  spec: Record<string, unknown>;
  status?: {
    PostgresClusterStatus?: string;
    reason?: string;
    observedGeneration?: number;
    backup?: BackupStatus;
    restore?: RestoreStatus;
  };
}

const READY_AFTER_MS = 1500;
const [master, sister1] = clusters();
/** The backup store: a namespace of the master the operator makes itself. */
const STORE_NAMESPACE = unique('pg-backups');
let operator: ExampleOperator;

beforeAll(async () => {
  operator = await startExampleOperator({
    clusters: clusters(),
    readyAfterMs: READY_AFTER_MS,
    backupStore: { cluster: master!, namespace: STORE_NAMESPACE },
    // The operator's own account of what it does, when a test needs explaining.
    ...(process.env.INTEROP_TEST_VERBOSE ? { log: (line: string) => console.log(line) } : {}),
  });
});

afterAll(async () => {
  await operator.stop();
  await master!.core.deleteNamespace({ name: STORE_NAMESPACE }).catch(() => undefined);
});

const api = (namespace: string) => ({
  group: POSTGRESQL.group,
  version: POSTGRESQL.version,
  plural: POSTGRESQL.plural,
  namespace,
});
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

async function createNamespace(cluster: ClusterClient): Promise<string> {
  const namespace = unique('pg');
  await cluster.core.createNamespace({ body: { metadata: { name: namespace } } });
  return namespace;
}

async function createPostgresql(
  cluster: ClusterClient,
  namespace: string,
  spec: Record<string, unknown>,
  annotations: Record<string, string> = {},
  name = unique('acid'),
): Promise<Postgresql> {
  return (await cluster.custom.createNamespacedCustomObject({
    ...api(namespace),
    body: {
      apiVersion: POSTGRESQL.apiVersion,
      kind: POSTGRESQL.kind,
      metadata: { name, annotations },
      spec,
    },
  })) as Postgresql;
}

const readPostgresql = async (cluster: ClusterClient, namespace: string, name: string) =>
  (await cluster.custom.getNamespacedCustomObject({ ...api(namespace), name })) as Postgresql;

/** Waits until the postgresql has settled its current generation in `state`. */
function settled(cluster: ClusterClient, pg: Postgresql, state: string, generation = 1): Promise<Postgresql> {
  const { name, namespace } = pg.metadata;
  return eventually(
    `postgresql ${namespace}/${name} to be ${state} at generation ${generation}`,
    async () => {
      const current = await readPostgresql(cluster, namespace, name);
      return current.status?.PostgresClusterStatus === state &&
        current.status.observedGeneration === generation
        ? current
        : undefined;
    },
  );
}

const decode = (secret: V1Secret, key: string) =>
  Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');

async function secretNames(cluster: ClusterClient, namespace: string, name: string): Promise<string[]> {
  const list = await cluster.core.listNamespacedSecret({ namespace, labelSelector: `cluster-name=${name}` });
  return list.items.map((s) => s.metadata!.name!).sort();
}

const gone = (what: string, read: () => Promise<unknown>) => untilGone(what, read, 60_000);

describe.each([
  ['the master', master!],
  ['a sister cluster', sister1!],
])('the example operator in %s', (_where, cluster) => {
  test('a new postgresql is Creating, then Running with a Secret per user and a Service', async () => {
    // GIVEN a postgresql with two users
    const namespace = await createNamespace(cluster);
    const created = await createPostgresql(cluster, namespace, {
      teamId: 'acid',
      postgresql: { version: '16' },
      users: { main: ['superuser', 'createdb'], app_user: [] },
    });
    const { name, uid } = created.metadata;

    // THEN it is Creating first
    const creating = await eventually('the status Creating', async () => {
      const pg = await readPostgresql(cluster, namespace, name);
      return pg.status?.PostgresClusterStatus ? pg : undefined;
    });
    expect(creating.status?.PostgresClusterStatus).toBe('Creating');

    // AND Running after the delay
    const running = await settled(cluster, created, 'Running');
    expect(running.status?.reason).toBeUndefined();

    // AND each user has its credentials, owned by the postgresql
    expect(await secretNames(cluster, namespace, name)).toEqual(
      [credentialsSecretName('app_user', name), credentialsSecretName('main', name)].sort(),
    );
    expect(credentialsSecretName('app_user', name)).toBe(
      `app-user.${name}.credentials.postgresql.acid.zalan.do`,
    );
    for (const user of ['main', 'app_user']) {
      const secret = await cluster.core.readNamespacedSecret({
        namespace,
        name: credentialsSecretName(user, name),
      });
      expect(secret.type).toBe('Opaque');
      expect(decode(secret, 'username')).toBe(user);
      expect(decode(secret, 'password')).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(secret.metadata?.labels).toEqual({ application: 'spilo', 'cluster-name': name, team: 'acid' });
      expect(secret.metadata?.ownerReferences).toEqual([
        expect.objectContaining({ apiVersion: 'acid.zalan.do/v1', kind: 'postgresql', name, uid }),
      ]);
    }

    // AND a Service named like the postgresql, with a cluster IP
    const service = await cluster.core.readNamespacedService({ namespace, name });
    expect(service.spec?.type).toBe('ClusterIP');
    expect(service.spec?.clusterIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(service.spec?.ports).toEqual([
      expect.objectContaining({ name: 'postgresql', port: 5432, targetPort: 5432 }),
    ]);
    expect(service.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'postgresql', uid })]);

    // AND an empty data marker, owned by the postgresql
    const marker = await cluster.core.readNamespacedConfigMap({ namespace, name: dataConfigMapName(name) });
    expect(dataConfigMapName(name)).toBe(`${name}-data`);
    expect(marker.data ?? {}).toEqual({});
    expect(marker.metadata?.labels).toEqual({ application: 'spilo', 'cluster-name': name });
    expect(marker.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'postgresql', uid })]);
  });

  test('adding a user adds its Secret, removing one deletes it, and passwords never change', async () => {
    // GIVEN a Running postgresql with one user
    const namespace = await createNamespace(cluster);
    const pg = await createPostgresql(cluster, namespace, { teamId: 'acid', users: { main: [] } });
    const { name } = pg.metadata;
    await settled(cluster, pg, 'Running');
    const mainSecret = credentialsSecretName('main', name);
    const password = decode(
      await cluster.core.readNamespacedSecret({ namespace, name: mainSecret }),
      'password',
    );

    // WHEN a user is added
    await cluster.custom.patchNamespacedCustomObject(
      { ...api(namespace), name, body: { spec: { users: { main: [], reader: ['login'] } } } },
      mergePatch,
    );
    // THEN the postgresql goes through Updating to Running, and the new user has its Secret
    await eventually('the status Updating', async () => {
      const current = await readPostgresql(cluster, namespace, name);
      return current.status?.PostgresClusterStatus === 'Updating' ? true : undefined;
    });
    await settled(cluster, pg, 'Running', 2);
    expect(await secretNames(cluster, namespace, name)).toEqual(
      [credentialsSecretName('reader', name), mainSecret].sort(),
    );

    // WHEN the first user is removed
    await cluster.custom.patchNamespacedCustomObject(
      { ...api(namespace), name, body: { spec: { users: { main: null } } } },
      mergePatch,
    );
    // THEN its Secret goes and the other stays
    await settled(cluster, pg, 'Running', 3);
    await eventually('the removed user Secret to go', async () =>
      (await secretNames(cluster, namespace, name)).includes(mainSecret) ? undefined : true,
    );
    expect(await secretNames(cluster, namespace, name)).toEqual([credentialsSecretName('reader', name)]);

    // WHEN it is added back, THEN it gets a new Secret; the remaining user's password is unchanged
    const readerSecret = credentialsSecretName('reader', name);
    const readerPassword = decode(
      await cluster.core.readNamespacedSecret({ namespace, name: readerSecret }),
      'password',
    );
    await cluster.custom.patchNamespacedCustomObject(
      { ...api(namespace), name, body: { spec: { users: { main: [] } } } },
      mergePatch,
    );
    await settled(cluster, pg, 'Running', 4);
    const again = await cluster.core.readNamespacedSecret({ namespace, name: mainSecret });
    expect(decode(again, 'password')).not.toBe(password);
    const reader = await cluster.core.readNamespacedSecret({ namespace, name: readerSecret });
    expect(decode(reader, 'password')).toBe(readerPassword);
  });

  test('a Secret deleted by hand is made again (level-based)', async () => {
    const namespace = await createNamespace(cluster);
    const pg = await createPostgresql(cluster, namespace, { teamId: 'acid', users: { main: [] } });
    await settled(cluster, pg, 'Running');
    const name = credentialsSecretName('main', pg.metadata.name);
    const before = await cluster.core.readNamespacedSecret({ namespace, name });

    await cluster.core.deleteNamespacedSecret({ namespace, name });

    const after = await eventually('the Secret to be made again', async () => {
      try {
        const secret = await cluster.core.readNamespacedSecret({ namespace, name });
        return secret.metadata?.uid !== before.metadata?.uid ? secret : undefined;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    });
    expect(decode(after, 'username')).toBe('main');
  });

  test('deleting the postgresql garbage-collects its Secrets and Service', async () => {
    const namespace = await createNamespace(cluster);
    const pg = await createPostgresql(cluster, namespace, { teamId: 'acid', users: { main: [], other: [] } });
    const { name } = pg.metadata;
    await settled(cluster, pg, 'Running');
    expect(await secretNames(cluster, namespace, name)).toHaveLength(2);

    await cluster.custom.deleteNamespacedCustomObject({ ...api(namespace), name });

    await gone('the postgresql to go', () => readPostgresql(cluster, namespace, name));
    await gone('the Service to be collected', () => cluster.core.readNamespacedService({ namespace, name }));
    await eventually(
      'the Secrets to be collected',
      async () => ((await secretNames(cluster, namespace, name)).length === 0 ? true : undefined),
      60_000,
    );
  });

  test('teamId "fail" ends in CreateFailed with a reason, and nothing is created', async () => {
    const namespace = await createNamespace(cluster);
    const pg = await createPostgresql(cluster, namespace, { teamId: 'fail', users: { main: [] } });

    const failed = await settled(cluster, pg, 'CreateFailed');

    expect(failed.status?.reason).toMatch(/fail/);
    expect(await secretNames(cluster, namespace, pg.metadata.name)).toEqual([]);
  });
});

describe('the example operator test hooks', () => {
  const cluster = master!;

  test('the annotation example-operator/fail ends in CreateFailed, and a later spec change in UpdateFailed', async () => {
    const namespace = await createNamespace(cluster);
    const pg = await createPostgresql(
      cluster,
      namespace,
      { teamId: 'acid', users: { main: [] } },
      { 'example-operator/fail': 'true' },
    );
    const failed = await settled(cluster, pg, 'CreateFailed');
    expect(failed.status?.reason).toContain('example-operator/fail');

    // A spec change is an update: with the annotation still there, it fails as an update.
    await cluster.custom.patchNamespacedCustomObject(
      { ...api(namespace), name: pg.metadata.name, body: { spec: { users: { main: [], more: [] } } } },
      mergePatch,
    );
    await settled(cluster, pg, 'UpdateFailed', 2);
  });

  test('example-operator/slow-delete keeps a deleted postgresql visible for a while', async () => {
    const namespace = await createNamespace(cluster);
    const pg = await createPostgresql(
      cluster,
      namespace,
      { teamId: 'acid', users: { main: [] } },
      { 'example-operator/slow-delete': '2000' },
    );
    const { name } = pg.metadata;
    const running = await settled(cluster, pg, 'Running');
    expect(running.metadata.finalizers).toEqual([SLOW_DELETE_FINALIZER]);

    await cluster.custom.deleteNamespacedCustomObject({ ...api(namespace), name });

    const deleting = await readPostgresql(cluster, namespace, name);
    expect(deleting.metadata.deletionTimestamp).toBeDefined();
    await gone('the postgresql to go', () => readPostgresql(cluster, namespace, name));
  });
});

/** Sets an annotation on the postgresql. */
const annotate = (cluster: ClusterClient, pg: Postgresql, annotation: string, value: string) =>
  cluster.custom.patchNamespacedCustomObject(
    {
      ...api(pg.metadata.namespace),
      name: pg.metadata.name,
      body: { metadata: { annotations: { [annotation]: value } } },
    },
    mergePatch,
  );

/** Waits until the operator has answered the request in `status.<what>` with a final state. */
function answered<K extends 'backup' | 'restore'>(
  cluster: ClusterClient,
  pg: Postgresql,
  what: K,
  request: string,
): Promise<NonNullable<NonNullable<Postgresql['status']>[K]>> {
  const { namespace, name } = pg.metadata;
  return eventually(`the ${what} ${request} of ${namespace}/${name} to end`, async () => {
    const answer = (await readPostgresql(cluster, namespace, name)).status?.[what];
    return answer?.request === request && answer.state !== 'InProgress' ? answer : undefined;
  });
}

/** The password of a user's credentials Secret, as bytes (compared, never printed). */
async function passwordOf(cluster: ClusterClient, pg: Postgresql, user: string): Promise<Buffer> {
  const { namespace, name } = pg.metadata;
  const secret = await cluster.core.readNamespacedSecret({
    namespace,
    name: credentialsSecretName(user, name),
  });
  return Buffer.from(secret.data?.password ?? '', 'base64');
}

/** Whether two passwords are the same bytes: a boolean, so a failure prints neither. */
const samePassword = (a: Buffer, b: Buffer): boolean => a.length > 0 && a.equals(b);

describe('backups and restores of the example operator', () => {
  test('a backup on one cluster restores the data and the passwords into a postgresql of the same name on another, its source gone', async () => {
    // GIVEN a Running postgresql on the master with two users, and rows in its data marker
    const namespace = unique('pg');
    for (const cluster of [master!, sister1!])
      await cluster.core.createNamespace({ body: { metadata: { name: namespace } } });
    const name = unique('acid');
    const source = await createPostgresql(
      master!,
      namespace,
      { teamId: 'acid', users: { main: [], app_user: [] } },
      {},
      name,
    );
    await settled(master!, source, 'Running');
    const rows = { 'row-1': 'alice', 'row-2': 'bob' };
    await master!.core.patchNamespacedConfigMap(
      { namespace, name: dataConfigMapName(name), body: { data: rows } },
      mergePatch,
    );
    const mainPassword = await passwordOf(master!, source, 'main');
    const appPassword = await passwordOf(master!, source, 'app_user');

    // WHEN it is backed up
    const backupId = unique('backup');
    const backupRequest = JSON.stringify({ id: backupId, delayMs: 200 });
    await annotate(master!, source, BACKUP_ANNOTATION, backupRequest);
    const backup = await answered(master!, source, 'backup', backupRequest);

    // THEN the backup is beside the postgresql: its ConfigMap holds the rows and no password, its Secret the passwords
    expect(backup).toMatchObject({ state: 'Succeeded', configMap: backupConfigMapName(name, backupId) });
    const beside = await master!.core.readNamespacedConfigMap({ namespace, name: backup.configMap! });
    expect(JSON.parse(beside.data?.data ?? '')).toEqual(rows);
    const besideText = JSON.stringify(beside);
    expect(besideText.includes(mainPassword.toString('utf8'))).toBe(false);
    expect(besideText.includes(appPassword.toString('utf8'))).toBe(false);
    const besideSecret = await master!.core.readNamespacedSecret({ namespace, name: backup.configMap! });
    expect(Object.keys(besideSecret.data ?? {})).toEqual(['passwords']);
    // AND a copy is in the backup store, which the operator made
    const stored = storedBackupName(namespace, name, backupId);
    const copy = await master!.core.readNamespacedConfigMap({ namespace: STORE_NAMESPACE, name: stored });
    expect(copy.data).toMatchObject({ namespace, cluster: name, id: backupId, request: backupRequest });
    expect(JSON.stringify(copy).includes(mainPassword.toString('utf8'))).toBe(false);
    await master!.core.readNamespacedSecret({ namespace: STORE_NAMESPACE, name: stored });

    // GIVEN the source is gone (its backup beside it with it), and a new postgresql of the same
    // namespace and name on a sister, with one user of the backup and one user it does not know
    await master!.custom.deleteNamespacedCustomObject({ ...api(namespace), name });
    await gone('the source postgresql to go', () => readPostgresql(master!, namespace, name));
    const target = await createPostgresql(
      sister1!,
      namespace,
      { teamId: 'acid', users: { main: [], reader: [] } },
      {},
      name,
    );
    await settled(sister1!, target, 'Running');
    const fresh = await sister1!.core.readNamespacedConfigMap({ namespace, name: dataConfigMapName(name) });
    expect(fresh.data ?? {}).toEqual({});
    expect(samePassword(await passwordOf(sister1!, target, 'main'), mainPassword)).toBe(false);
    const readerPassword = await passwordOf(sister1!, target, 'reader');

    // WHEN the backup is restored there
    const restoreRequest = JSON.stringify({ id: unique('restore'), backup: backupId, delayMs: 200 });
    await annotate(sister1!, target, RESTORE_ANNOTATION, restoreRequest);
    const restore = await answered(sister1!, target, 'restore', restoreRequest);

    // THEN it succeeded, the rows are in its data marker, and the user of the backup has its password back
    expect(restore).toMatchObject({ state: 'Succeeded', backup: backupId });
    expect(restore.restoredAt).toBeDefined();
    const restored = await sister1!.core.readNamespacedConfigMap({
      namespace,
      name: dataConfigMapName(name),
    });
    expect(restored.data).toEqual(rows);
    expect(samePassword(await passwordOf(sister1!, target, 'main'), mainPassword)).toBe(true);
    // AND the user the backup does not know keeps its password; the one the spec does not list gets no Secret
    expect(samePassword(await passwordOf(sister1!, target, 'reader'), readerPassword)).toBe(true);
    expect(await secretNames(sister1!, namespace, name)).toEqual(
      [credentialsSecretName('main', name), credentialsSecretName('reader', name)].sort(),
    );
    // AND the operator leaves the data as restored
    await new Promise((resolve) => setTimeout(resolve, 500));
    const later = await sister1!.core.readNamespacedConfigMap({ namespace, name: dataConfigMapName(name) });
    expect(later.data).toEqual(rows);
  });

  test.each([
    [
      'labelled fail',
      (backup: string) => ({ backup, label: 'fail' }),
      /told to fail this restore \(label fail\)/,
    ],
    [
      'of a backup that is not there',
      () => ({ backup: 'no-such-backup' }),
      /backup no-such-backup .*not found/,
    ],
    ['that names no backup', () => ({}), /names no backup/],
  ])('a restore %s fails with its reason, and the data stays', async (_what, ask, reason) => {
    // GIVEN a Running postgresql with rows, and a backup of it
    const namespace = await createNamespace(master!);
    const pg = await createPostgresql(master!, namespace, { teamId: 'acid', users: { main: [] } });
    await settled(master!, pg, 'Running');
    const rows = { 'row-1': 'carol' };
    await master!.core.patchNamespacedConfigMap(
      { namespace, name: dataConfigMapName(pg.metadata.name), body: { data: rows } },
      mergePatch,
    );
    const backupId = unique('backup');
    const backupRequest = JSON.stringify({ id: backupId, delayMs: 0 });
    await annotate(master!, pg, BACKUP_ANNOTATION, backupRequest);
    expect((await answered(master!, pg, 'backup', backupRequest)).state).toBe('Succeeded');

    // WHEN a restore is asked for
    const request = JSON.stringify({ id: unique('restore'), delayMs: 0, ...ask(backupId) });
    await annotate(master!, pg, RESTORE_ANNOTATION, request);

    // THEN it failed with its reason, and the data marker is as it was
    const restore = await answered(master!, pg, 'restore', request);
    expect(restore.state).toBe('Failed');
    expect(restore.reason).toMatch(reason);
    const marker = await master!.core.readNamespacedConfigMap({
      namespace,
      name: dataConfigMapName(pg.metadata.name),
    });
    expect(marker.data).toEqual(rows);
  });
});
