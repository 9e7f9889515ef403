/**
 * The landscape soak: a day in the life of a landscape, on real servers of its own, with the
 * promises a platform relies on (docs/reliability.md) checked at the end of it.
 *
 * Several platforms (tenants) run instances through their lives at once (provision, bind, update,
 * unbind, then the deprovision, or a second binding that is rotated and its predecessor unbound),
 * two brokers and two workers serving them, and send a share of their provisions and binds again
 * identically, as platforms retry. Meanwhile the
 * landscape changes under them: the plan changes twice (each change rolled out to its instances),
 * the payload keys are rotated (a new key added everywhere, then made the first) and so are the
 * OSB credentials (new ones in the brokers' files, the platforms switching a moment later), every
 * worker and broker is SIGKILLed and started again, Temporal is killed and started again, and the
 * sister's apiserver is stopped for a while, an admin rotates generated passwords, and the settings
 * every instance reads (a ConfigMap its references name) change. A hostile plan that takes a namespace from the
 * platform's parameters is in the catalog, and a tenant points it at kube-system.
 *
 * The verdict line:
 *
 *   soak: N operations, E ended once, R repeats (X non-2xx), L lost, S stuck, C capacity
 *   violations, O objects outside their namespace, Q orphans, K secret hits
 *
 * Size: INTEROP_SOAK_SECONDS (how long the tenants start new lives, default 45), INTEROP_SOAK_TENANTS
 * (default 3) and INTEROP_SOAK_LIVES (lives each tenant runs at once, default 2). The long run
 * (`node dist/bench/soak.js`) is 30 minutes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ClusterClient } from '../../src/kube/clients.js';
import { listRecords, patchRecord } from '../../src/kube/custom-objects.js';
import { applyObject, ensureNamespace } from '../../src/kube/objects.js';
import { LABELS, instanceNamespace, labelValue } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFSERVICE,
  SFPLAN,
  type KubeObject,
  type SFCluster,
  type SFPlan,
} from '../../src/resources/types.js';
import { generatePayloadKey } from '../../src/temporal/codec.js';
import { freePort } from '../../dev/local/processes.js';
import { auditUntilSettled } from '../support/audit.js';
import { clusters, environment, eventually, temporalClient } from '../support/env.js';
import { faultLandscape, sweepLandscape } from '../support/fault-environment.js';
import { installFaultPlans, PLAN_ID, PLAN_KINDS, SERVICE_ID, type Platform } from '../support/fault-run.js';
import { osbClient } from '../support/osb.js';
import type { Credential } from '../support/secrets-sweep.js';
import { CREDENTIALS, type SystemProcess } from '../support/system.js';
import { ADMIN, callAdmin } from '../support/admin.js';
import { ROTATE_SECRET_ACTION } from '../../src/workflows/messages.js';

const SECONDS = Number(process.env.INTEROP_SOAK_SECONDS ?? 45);
const TENANTS = Number(process.env.INTEROP_SOAK_TENANTS ?? 3);
const LIVES = Number(process.env.INTEROP_SOAK_LIVES ?? 2);
/** The share of provisions and binds a platform sends again identically. */
const REPEAT_SHARE = 0.3;
/** How long after the last life started an operation may still run before it counts as stuck. */
const STUCK_AFTER_MS = 180_000;
/** The hostile plan: its provision puts a ConfigMap into the namespace the parameter `ns` names. */
const HOSTILE_PLAN_ID = 'f4a17c1e-3b0d-4d55-9c1e-0fa0175e00ff';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('soak: a day in the life of a landscape', () => {
  const landscape = faultLandscape('soak');
  const rotated: { payloadKeys?: string; credentials: Credential[] } = { credentials: [] };

  test(
    `${TENANTS} tenants for ${SECONDS} s under rollouts, rotations and faults: every promise holds`,
    async () => {
      const { env, settings } = landscape;
      const [master] = env.clusters;
      // The OSB credentials in files the brokers re-read, as a platform team mounts them.
      const secrets = path.join(env.info.workDir, 'osb-credentials');
      mkdirSync(secrets, { recursive: true });
      const usernameFile = path.join(secrets, 'username');
      const passwordFile = path.join(secrets, 'password');
      writeFileSync(usernameFile, CREDENTIALS.username);
      writeFileSync(passwordFile, CREDENTIALS.password);
      const brokerEnv = {
        ...settings.extraEnv,
        INTEROP_ADMIN_USERNAME: ADMIN.username,
        INTEROP_ADMIN_PASSWORD: ADMIN.password,
        INTEROP_BROKER_USERNAME: '',
        INTEROP_BROKER_PASSWORD: '',
        INTEROP_BROKER_USERNAME_FILE: usernameFile,
        INTEROP_BROKER_PASSWORD_FILE: passwordFile,
      };
      let payloadKeys = settings.payloadKeys;
      const start = async (role: 'broker' | 'worker', port?: number) =>
        role === 'broker'
          ? landscape.start('broker', { payloadKeys, extraEnv: brokerEnv, port: port! })
          : landscape.start('worker', {
              payloadKeys,
              extraEnv: { ...settings.extraEnv, INTEROP_FOLLOW_REFERENCES: 'true' },
            });

      // GIVEN two brokers and two workers, the fault plans and a hostile plan in the catalog
      const brokerPorts = [settings.port, await freePort()];
      const brokers: SystemProcess[] = [];
      for (const port of brokerPorts) brokers.push(await start('broker', port));
      const workers = [await start('worker'), await start('worker')];
      await installFaultPlans(brokers[0]!.url);
      await shareSettings(env.clusters, 'low');
      await preparePlan(master!);
      await installHostilePlan(brokers[0]!.url);
      let turn = 0;
      const broker = () => brokers[turn++ % brokers.length]!.url;
      const tenants = Array.from({ length: TENANTS }, () =>
        landscape.platform(broker, { repeatShare: REPEAT_SHARE, retryWhileBusy: true, rotateBindings: true }),
      );

      // WHEN the tenants run lives side by side until the time is up
      const until = Date.now() + SECONDS * 1000;
      let lives = 0;
      const running = tenants.map((platform, t) =>
        Promise.all(
          Array.from({ length: LIVES }, async (_, l) => {
            await sleep((t * LIVES + l) * 400);
            while (Date.now() < until) {
              lives += 1;
              await platform.lifecycle(lives % 2 === 0);
            }
          }),
        ),
      );
      // AND one tenant points the hostile plan at kube-system
      const hostileOutside: string[] = [];
      const hostile = (async () => {
        const platform = tenants[0]!;
        await sleep(SECONDS * 100);
        const refused = await platform.provision(HOSTILE_PLAN_ID, 'failed', { ns: 'kube-system' });
        hostileOutside.push(...(await objectsOutsideTheirNamespace(env.clusters, [refused.id])));
        await platform.deprovision(refused.id, HOSTILE_PLAN_ID);
      })();

      // AND the landscape changes under them
      const events: string[] = [];
      const at = async (share: number, what: string, act: () => Promise<void>) => {
        await sleep(Math.max(0, until - SECONDS * 1000 * (1 - share) - Date.now()));
        const began = Date.now();
        await act();
        events.push(`${what} (${Date.now() - began} ms)`);
      };
      const restart = async (list: SystemProcess[], i: number, role: 'broker' | 'worker') => {
        await list[i]!.kill();
        list[i] = await start(role, role === 'broker' ? brokerPorts[i] : undefined);
      };
      const newKey = generatePayloadKey('k2');
      const newPassword = `rotated-${randomBytes(12).toString('hex')}`;
      rotated.credentials.push(['the rotated broker password', newPassword]);
      let rotations = 0;
      const changes = (async () => {
        await at(0.1, 'plan changed', () => changePlan(master!, '101'));
        await at(0.2, 'worker 1 killed; started again holding a new payload key', async () => {
          payloadKeys = `${settings.payloadKeys},${newKey}`;
          await restart(workers, 0, 'worker');
        });
        await at(0.25, 'the other processes killed; started again holding it', async () => {
          await restart(workers, 1, 'worker');
          await restart(brokers, 0, 'broker');
          await restart(brokers, 1, 'broker');
        });
        await at(0.35, 'OSB credentials rotated', async () => {
          writeFileSync(passwordFile, newPassword);
          await sleep(3000);
          for (const platform of tenants)
            platform.credentialsInUse = { username: CREDENTIALS.username, password: newPassword };
        });
        await at(0.45, 'Temporal killed and started again', async () => {
          await env.killTemporal();
          await sleep(2000);
          await env.startTemporal();
        });
        await at(0.55, 'every process killed and started again with the new payload key first', async () => {
          payloadKeys = `${newKey},${settings.payloadKeys}`;
          rotated.payloadKeys = payloadKeys;
          for (const i of [0, 1]) await restart(workers, i, 'worker');
          for (const i of [0, 1]) await restart(brokers, i, 'broker');
        });
        await at(0.65, 'the sister apiserver stopped for 5 s', async () => {
          await env.stopSister();
          await sleep(5000);
          await env.startSister();
        });
        await at(0.7, 'generated passwords rotated', async () => {
          rotations += await rotatePasswords(brokers[0]!.url, tenants);
        });
        await at(0.5, 'the settings every instance reads changed', () => shareSettings(env.clusters, 'high'));
        await at(0.75, 'plan changed again', () => changePlan(master!, '102'));
      })();

      await Promise.all([changes, hostile]);
      for (const platform of tenants) platform.stopPollingAt = until + STUCK_AFTER_MS;
      await Promise.all(running);
      console.log(`[soak] ${lives} lives; ${events.join('; ')}`);

      // THEN every rollout ends (of the plan's two revisions, and of the settings' change on each
      // cluster), as an admin lists them: the updates it starts for instances kept at an older
      // revision run after the tenants' own operations
      const listRollouts = async () => {
        const listed = await callAdmin(brokers[0]!.url, 'GET', '/admin/rollouts?limit=100');
        return ((listed.body.items ?? []) as { kind: string; progress?: { state?: string } }[]).map(
          (r) => `${r.kind} ${r.progress?.state ?? '?'}`,
        );
      };
      const rollouts = await eventually(
        'every rollout done',
        async () => {
          // A change of the settings starts its rollouts a moment after it is seen (it settles
          // first): the tenants may be done before that, so the listing waits for them too.
          const listed = await listRollouts();
          const both =
            listed.some((r) => r.startsWith('plan')) && listed.some((r) => r.startsWith('reference'));
          return both && listed.every((r) => r.endsWith(' done')) ? listed : undefined;
        },
        STUCK_AFTER_MS,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}; the rollouts: ${(await listRollouts()).join(', ')}`);
      });
      console.log(`[soak] rollouts: ${rollouts.join(', ')}`);
      expect(rollouts.some((r) => r.startsWith('plan'))).toBe(true);
      expect(rollouts.some((r) => r.startsWith('reference'))).toBe(true);

      // AND every promise held
      const temporal = await temporalClient(payloadKeys);
      const verdict = await (async () => {
        try {
          return await auditUntilSettled(
            {
              clusters: env.clusters,
              temporal: temporal.client,
              operations: tenants.flatMap((p) => p.operations),
              instances: tenants.flatMap((p) => p.expected()),
              kinds: PLAN_KINDS,
              // A rollout's updates, and the rotations the admin started
              startedByBroker: (memo) =>
                (memo?.requestHash.startsWith('rollout/') ?? false) ||
                memo?.operation === ROTATE_SECRET_ACTION,
            },
            'soak',
            120_000,
          );
        } finally {
          await temporal.close();
        }
      })();
      const instanceIds = tenants.flatMap((p) => [...p.instances.keys()]);
      const live = new Set(
        tenants.flatMap((p) =>
          p
            .expected()
            .filter((i) => i.live)
            .map((i) => i.id),
        ),
      );
      const outside = [...hostileOutside, ...(await objectsOutsideTheirNamespace(env.clusters, instanceIds))];
      const capacity = await capacityViolations(master!, environment().namespace, live);
      const repeats = tenants.reduce((n, p) => n + p.repeats, 0);
      const repeatSurprises = tenants.flatMap((p) => p.repeatSurprises);
      const stuck = tenants.flatMap((p) => p.stuck);
      const surprises = tenants.flatMap((p) => p.surprises);
      // (the secrets sweep reads the processes' whole logs: it stops them first)
      const { result: sweep } = await sweepLandscape(landscape, rotated);
      const planted = sweep.hits.filter((h) => h.startsWith('a credential planted'));
      const secretHits = sweep.hits.filter((h) => !h.startsWith('a credential planted'));
      const line =
        `soak: ${verdict.operations} operations, ${verdict.ended - verdict.duplicated} ended once, ` +
        `${repeats} repeats (${repeatSurprises.length} non-2xx), ${verdict.lost} lost, ${stuck.length} stuck, ` +
        `${capacity.length} capacity violations, ${outside.length} objects outside their namespace, ` +
        `${verdict.orphaned} orphans, ${secretHits.length} secret hits`;
      console.log(
        [
          `[soak] ${line}; beside them ${verdict.brokerRuns} runs of the broker's rollouts and of ${rotations} rotations; ${tenants.reduce((n, p) => n + p.busyRetries, 0)} requests sent again after 422; ${tenants.reduce((n, p) => n + p.endedBeforeAnswered, 0)} sent again after no answer found their operation ended`,
          ...[...repeatSurprises, ...stuck, ...capacity, ...outside, ...secretHits, ...surprises].slice(
            0,
            40,
          ),
        ].join('\n  '),
      );
      expect(planted).toHaveLength(1);
      expect(verdict.operations).toBeGreaterThan(0);
      expect(rotations).toBeGreaterThan(0);
      expect(verdict.brokerRuns).toBeGreaterThan(rotations);
      expect(repeats).toBeGreaterThan(0);
      expect({ repeatSurprises, stuck, capacity, outside, secretHits, surprises }).toEqual({
        repeatSurprises: [],
        stuck: [],
        capacity: [],
        outside: [],
        secretHits: [],
        surprises: [],
      });
      expect(verdict.findings).toEqual([]);
    },
    SECONDS * 1000 + STUCK_AFTER_MS + 600_000,
  );
});

/**
 * Changes the fault plan's spec (its `maxConnections`), which rolls its instances out to the new
 * revision (`autoUpdateInstances`).
 */
async function changePlan(master: ClusterClient, maxConnections: string): Promise<void> {
  await patchRecord<SFPlan>(master, SFPLAN, environment().namespace, PLAN_ID, {
    spec: { autoUpdateInstances: true, context: { maxConnections } },
  });
}

/** The namespace of the settings every instance reads, on every cluster. */
const SHARED = 'soak-shared';

/** Writes the settings every instance reads (a ConfigMap in {@link SHARED}) on every cluster. */
async function shareSettings(clusters: readonly ClusterClient[], level: string): Promise<void> {
  for (const cluster of clusters) {
    await ensureNamespace(cluster, SHARED);
    await applyObject(cluster, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'soak-settings', namespace: SHARED },
      data: { level },
    });
  }
}

/**
 * Before any instance exists: the fault plan's provision gets a generated password (an SFSecret)
 * and an annotation read from the shared settings, whose namespace its service allows, and its
 * bindings become rotatable.
 */
async function preparePlan(master: ClusterClient): Promise<void> {
  await patchRecord(master, SFSERVICE, environment().namespace, SERVICE_ID, {
    spec: { allowedNamespaces: [SHARED] },
  });
  const plans = await listRecords<SFPlan>(master, SFPLAN, environment().namespace);
  const faults = plans.find((p) => p.spec.id === PLAN_ID)!;
  const reference =
    '  annotations:\n    soak/level:\n      getValueFrom: ' +
    `{kind: ConfigMap, name: soak-settings, namespace: ${SHARED}, path: '{.data.level}'}\n`;
  await patchRecord<SFPlan>(master, SFPLAN, environment().namespace, faults.metadata.name, {
    spec: {
      bindingRotatable: true,
      templates: faults.spec.templates.map((t) =>
        t.action === 'provision'
          ? {
              ...t,
              content:
                `${(t.content ?? '').replace('  annotations:\n', reference)}\n---\napiVersion: osb.servicefabrik.io/v1alpha1\nkind: SFSecret\n` +
                'metadata:\n  name: password\nspec:\n  type: password\n' +
                '  secretName: soak-{{instance.metadata.name}}-admin\n  length: 32\n',
            }
          : t,
      ),
    },
  });
}

/**
 * Rotates the generated password of live instances through the admin API, as an operator does: an
 * instance busy with an operation of its own or of a binding refuses (409, 422) and another is
 * tried. Returns how many rotations started.
 */
async function rotatePasswords(url: string, tenants: readonly Platform[]): Promise<number> {
  const live = tenants.flatMap((p) =>
    p
      .expected()
      .filter((i) => i.live)
      .map((i) => i.id),
  );
  let started = 0;
  for (const id of live) {
    if (started >= 3) break;
    const res = await callAdmin(url, 'POST', `/admin/instances/${id}/secrets/password/rotate`);
    if (res.status === 202) started += 1;
    else if (![404, 409, 422].includes(res.status))
      throw new Error(`rotating the password of ${id}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return started;
}

/**
 * A plan like the fault plan whose provision also puts a ConfigMap into the namespace the
 * platform's parameter `ns` names: what a careless plan author writes.
 */
async function installHostilePlan(url: string): Promise<void> {
  const [admin] = clusters();
  const plans = await listRecords<SFPlan>(admin!, SFPLAN, environment().namespace);
  const faults = plans.find((p) => p.spec.id === PLAN_ID)!;
  const hostile: KubeObject = {
    apiVersion: faults.apiVersion,
    kind: faults.kind,
    metadata: { name: HOSTILE_PLAN_ID, namespace: environment().namespace },
    spec: {
      ...faults.spec,
      id: HOSTILE_PLAN_ID,
      name: 'faults-hostile',
      templates: faults.spec.templates.map((t) =>
        t.action === 'provision'
          ? {
              ...t,
              content:
                `${t.content ?? ''}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n` +
                '  name: hostile-{{instance.metadata.name}}\n  namespace: {{instance.spec.parameters.ns}}\n' +
                'data:\n  written: by a plan that takes its namespace from the platform\n',
            }
          : t,
      ),
    },
  };
  await applyObject(admin!, hostile);
  const osb = osbClient(url);
  await eventually('the hostile plan in the catalog', async () => {
    const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
    return services?.some((s) => s.plans.some((p) => p.id === HOSTILE_PLAN_ID)) ? true : undefined;
  });
}

/**
 * Objects labelled with one of the run's instances outside that instance's namespace, on any
 * cluster: ConfigMaps, Secrets and Services (the kinds a plan or its operator writes).
 */
async function objectsOutsideTheirNamespace(
  clusters: readonly ClusterClient[],
  instanceIds: readonly string[],
): Promise<string[]> {
  const byLabel = new Map(instanceIds.map((id) => [labelValue(id), id]));
  const found: string[] = [];
  for (const cluster of clusters) {
    const lists = await Promise.all([
      cluster.core.listConfigMapForAllNamespaces({ labelSelector: LABELS.instanceId }),
      cluster.core.listSecretForAllNamespaces({ labelSelector: LABELS.instanceId }),
      cluster.core.listServiceForAllNamespaces({ labelSelector: LABELS.instanceId }),
    ]);
    for (const object of lists.flatMap((l) => l.items as KubeObject[])) {
      const id = byLabel.get(object.metadata.labels?.[LABELS.instanceId] ?? '');
      if (id && object.metadata.namespace !== instanceNamespace(id))
        found.push(
          `${object.kind ?? 'object'} ${object.metadata.namespace}/${object.metadata.name} of instance ${id} on cluster ${cluster.id}`,
        );
    }
  }
  return found;
}

/** Reservations of instances that are gone, and clusters booked beyond their allocatable capacity. */
async function capacityViolations(
  master: ClusterClient,
  namespace: string,
  live: ReadonlySet<string>,
): Promise<string[]> {
  const clusters = await listRecords<SFCluster>(master, SFCLUSTER, namespace);
  return clusters.flatMap((cluster) =>
    Object.keys(cluster.status?.reserved ?? {})
      .filter((id) => !live.has(id))
      .map((id) => `cluster ${cluster.metadata.name} still reserves for instance ${id}, which is gone`),
  );
}
