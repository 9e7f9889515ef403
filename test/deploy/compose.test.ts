/**
 * docker-compose.yml run as a user runs it, `compose up`, by Debian's Docker engine started here
 * (dev/local/docker-engine.ts: dockerd with stores, sockets and a containerd of its own, and no
 * iptables rules, so the node of the deploy suite beside it is left alone). No image registry is
 * reached: the file's image variables name images made on this machine, the broker's, worker's and
 * setup's `interoperator:dev` from the repository's Dockerfile (tools/build-image.sh, the build
 * image.test.ts and chart.test.ts use) and the servers' from the cached static binaries
 * (dev/local/oci-images.ts), with the programs on PATH as the file's commands expect. Then the
 * catalog on 127.0.0.1:8080 and an OSB provision and deprovision of the example plan, and
 * `down -v`. On a failure the containers' logs are saved in the run's folder.
 *
 * Needs root, Debian's docker.io and a compose client (tools/ensure-compose.sh installs both) and
 * the image build's tools; without them the tests are skipped with a warning, and fail under CI=true.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureBinaries } from '../../dev/local/binaries.js';
import { DOCKERD, startDockerEngine, type DockerEngine } from '../../dev/local/docker-engine.js';
import { makeBinaryImage } from '../../dev/local/oci-images.js';
import { cacheDir } from '../../dev/settings.js';
import { composeCommand } from '../support/compose.js';
import { eventually } from '../support/env.js';
import { buildTestImage, IMAGE_BUILD_MS, imageTools, TEST_IMAGE } from '../support/image.js';
import { deployEnvironment } from '../support/node.js';
import { osbClient, provisionBody, untilSettled } from '../support/osb.js';
import { describeWithTool, type Tool } from '../support/tools.js';

const run = promisify(execFile);

/** What the test needs: root, the engine, a compose client and the image build. */
function composeTools(): Tool {
  const compose = composeCommand();
  const build = imageTools();
  const missing = [
    ...(process.getuid?.() === 0 ? [] : ['root']),
    ...(existsSync(DOCKERD) ? [] : ["Debian's docker.io"]),
    ...(compose ? [] : ['a compose client']),
    ...(build.found ? [] : [build.name]),
  ];
  return {
    found: missing.length === 0 ? compose : undefined,
    name: missing.join(', '),
    install: '`bash tools/ensure-compose.sh` installs docker.io and docker-compose (as root)',
  };
}

const COMPOSE_FILE = path.join(process.cwd(), 'docker-compose.yml');
const PROJECT = 'interop-compose-test';
const BROKER = 'http://127.0.0.1:8080';
/** The example catalog's service and plan (examples/postgresql), whose schema requires `foo`. */
const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';

/** Whether the broker's catalog answers 200 within a few seconds (a starting broker may not answer). */
async function catalogAnswers(): Promise<true | undefined> {
  const response = await fetch(`${BROKER}/v2/catalog`, {
    headers: {
      Authorization: `Basic ${Buffer.from('broker:broker').toString('base64')}`,
      'X-Broker-API-Version': '2.17',
    },
    signal: AbortSignal.timeout(5000),
  }).catch(() => undefined);
  return response?.status === 200 ? true : undefined;
}

describeWithTool(composeTools())('docker-compose.yml up on a Docker engine', () => {
  const [composeCmd, ...composeArgs] = composeCommand()!;
  const runDir = path.join(deployEnvironment().workDir, 'compose');
  const osb = osbClient(BROKER, '2.17', { username: 'broker', password: 'broker' });
  let engine: DockerEngine | undefined;
  let imageEnv: Record<string, string> = {};

  /** Runs the compose client on the file, for this project, against the engine. */
  async function compose(args: readonly string[], timeoutMs = 5 * 60_000): Promise<string> {
    try {
      const { stdout } = await run(
        composeCmd!,
        [...composeArgs, '--file', COMPOSE_FILE, '--project-name', PROJECT, ...args],
        {
          env: { ...process.env, ...imageEnv, DOCKER_HOST: engine!.host },
          timeout: timeoutMs,
          maxBuffer: 64 * 1024 * 1024,
        },
      );
      return stdout;
    } catch (err) {
      const { stdout, stderr, message } = err as { stdout?: string; stderr?: string; message: string };
      throw new Error(`compose ${args.join(' ')} failed: ${message}\n${stdout ?? ''}\n${stderr ?? ''}`);
    }
  }

  /** Saves `compose ps` and every container's log in the run's folder; returns the folder. */
  async function saveLogs(): Promise<string> {
    mkdirSync(runDir, { recursive: true });
    for (const [file, args] of [
      ['ps.txt', ['ps', '--all']],
      ['logs.txt', ['logs', '--no-color', '--timestamps']],
    ] as const) {
      const text = await compose(args, 60_000).catch((err: Error) => err.message);
      writeFileSync(path.join(runDir, file), text);
    }
    return runDir;
  }

  /** Runs `body`; on a failure, saves the logs first and names the folder in the error. */
  async function savingLogsOnFailure(body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (err) {
      const folder = await saveLogs().catch(() => '(could not save logs)');
      if (err instanceof Error) err.message += `\n(compose ps and the containers' logs: ${folder})`;
      throw err;
    }
  }

  beforeAll(
    async () => {
      const begun = Date.now();
      mkdirSync(runDir, { recursive: true });
      engine = await startDockerEngine({ runDir: path.join(runDir, 'engine') });

      // GIVEN the images the file names, made here and loaded into the engine
      const build = buildTestImage();
      if (build.status !== 0) throw new Error(`tools/build-image.sh failed:\n${build.stderr}`);
      const testRef = `${TEST_IMAGE.repository}:${TEST_IMAGE.tag}`;
      await engine.load(build.dockerArchive, testRef);
      await engine.docker(['tag', testRef, 'interoperator:dev']);
      const bins = ensureBinaries(['temporal', 'etcd', 'kube']);
      const version = (binary: string) =>
        path.basename(path.dirname(binary)).replace(/^[a-z-]+-(?=v?\d)/, '');
      const servers = [
        { variable: 'TEMPORAL_IMAGE', name: 'temporal', binary: bins.temporal, entrypoint: ['temporal'] },
        { variable: 'ETCD_IMAGE', name: 'etcd', binary: bins.etcd },
        { variable: 'KUBE_APISERVER_IMAGE', name: 'kube-apiserver', binary: bins.kubeApiserver },
        {
          variable: 'KUBE_CONTROLLER_MANAGER_IMAGE',
          name: 'kube-controller-manager',
          binary: bins.kubeControllerManager,
        },
      ];
      const env: Record<string, string> = {};
      for (const server of servers) {
        const ref = `localhost/interop/${server.name}:${version(server.binary)}`;
        const archive = await makeBinaryImage(
          { ref, binaries: [server.binary], entrypoint: server.entrypoint },
          path.join(cacheDir(), 'images'),
        );
        env[server.variable] = await engine.load(archive, ref);
      }
      imageEnv = env;
      console.log(`[compose] engine up and images loaded in ${((Date.now() - begun) / 1000).toFixed(1)} s`);

      // WHEN the stack comes up (after what a killed run may have left)
      await compose(['down', '--volumes', '--remove-orphans']);
      const started = Date.now();
      await savingLogsOnFailure(async () => {
        await compose(['up', '--detach', '--no-build']);
        await eventually('the catalog to answer on 127.0.0.1:8080', catalogAnswers, 180_000);
      });
      console.log(`[compose] up to the catalog answering in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    },
    IMAGE_BUILD_MS + 10 * 60_000,
  );

  afterAll(async () => {
    if (!engine) return;
    try {
      await compose(['down', '--volumes', '--remove-orphans']);
    } finally {
      await engine.stop();
    }
  }, 180_000);

  test('the catalog answers on 127.0.0.1:8080 with the example service', async () => {
    await savingLogsOnFailure(async () => {
      const catalog = await osb('GET', '/v2/catalog');
      expect(catalog.status).toBe(200);
      const services = catalog.body.services as { id: string; plans: { id: string }[] }[];
      expect(services.find((s) => s.id === SERVICE_ID)?.plans.map((p) => p.id)).toContain(PLAN_ID);
    });
  });

  test('a provision of the example plan succeeds, and so does its deprovision', async () => {
    await savingLogsOnFailure(async () => {
      const instancePath = `/v2/service_instances/${randomUUID()}`;
      const lastOperation = (operation: unknown) =>
        `${instancePath}/last_operation?operation=${encodeURIComponent(String(operation))}`;

      const accepted = await osb(
        'PUT',
        `${instancePath}?accepts_incomplete=true`,
        provisionBody(SERVICE_ID, PLAN_ID, { foo: 'bar' }),
      );
      expect({ status: accepted.status, body: accepted.body }).toMatchObject({ status: 202 });
      const provisioned = await untilSettled(osb, lastOperation(accepted.body.operation), 120_000);
      expect(provisioned.body).toMatchObject({ state: 'succeeded' });

      const query = `service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`;
      const deleting = await osb('DELETE', `${instancePath}?${query}&accepts_incomplete=true`);
      expect(deleting.status).toBe(202);
      const deprovisioned = await untilSettled(osb, lastOperation(deleting.body.operation), 120_000);
      // Gone (410) is how a broker may say that a deprovision has finished.
      expect([410, 200]).toContain(deprovisioned.status);
      if (deprovisioned.status === 200) expect(deprovisioned.body).toMatchObject({ state: 'succeeded' });
      expect((await osb('GET', instancePath)).status).toBe(404);
    });
  }, 300_000);
});
