/**
 * The chart's values for reaching a Temporal cluster, on the production Temporal server: `helm
 * template` renders them, and the broker and the worker run as real processes with the
 * environment the chart gives its pods (the Secret the chart mounts stands as a folder of files at
 * the path the chart mounts it). Plain, against the run's server; TLS, against a server of this test
 * whose frontend serves a certificate signed by a CA made here.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { startTemporalServer, type TemporalServer } from '../../dev/local/temporal-server.js';
import { environment, unique } from '../support/env.js';
import { findHelm, helmTool, renderChart, type Manifest } from '../support/helm.js';
import { describeWithTool } from '../support/tools.js';
import { osbClient, provisionBody, untilSettled } from '../support/osb.js';
import {
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
} from '../support/system.js';

const SERVICE_ID = '7c1a5a2e-6a4b-4c55-9a7e-2d6f5f0f1a01';
const PLAN_ID = '2f3c9a8e-0d7b-4a8e-b7a6-5a1c0e9d4b02';
/** Where the chart mounts temporal.tls.secretName in its pods. */
const TLS_MOUNT = '/etc/interoperator/temporal-tls';
const SERVER_NAME = 'temporal-frontend.interop.test';

const helm = findHelm();
const env = environment();

interface Container {
  name: string;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string } }[];
}

/**
 * The Temporal settings the chart renders for the worker pod: its ConfigMap's INTEROP_TEMPORAL_*
 * entries, with the files of the mounted Secret found in `secretDir` instead.
 */
function chartTemporalEnv(set: readonly string[], secretDir?: string): Record<string, string> {
  const manifests = renderChart(helm!, { namespace: 'interop', set });
  const config = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name.endsWith('interoperator'));
  const worker = manifests.find(
    (m): m is Manifest & { spec: { template: { spec: PodSpec } } } =>
      m.kind === 'Deployment' && m.metadata.name.endsWith('-worker'),
  );
  if (!config?.data || !worker) throw new Error('the chart rendered no ConfigMap or worker Deployment');
  const pod = worker.spec.template.spec;
  const mount = pod.containers[0]!.volumeMounts?.find((m) => m.name === 'temporal-tls');
  const volume = pod.volumes?.find((v) => v.name === 'temporal-tls');
  if (secretDir) {
    // the Secret the values name is the one mounted, where the settings say
    expect(mount?.mountPath).toBe(TLS_MOUNT);
    expect(volume?.secret?.secretName).toBe('temporal-frontend-ca');
  } else expect(mount).toBeUndefined();
  return Object.fromEntries(
    Object.entries(config.data)
      .filter(([name]) => name.startsWith('INTEROP_TEMPORAL_') || name === 'INTEROP_TASK_QUEUE')
      .map(([name, value]) => [name, secretDir ? value.replace(TLS_MOUNT, secretDir) : value]),
  );
}

/** A CA and a frontend certificate it signs, for SERVER_NAME (openssl). */
function makeCertificates(dir: string): { caFile: string; certFile: string; keyFile: string } {
  mkdirSync(dir, { recursive: true });
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=interop test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl(
    'req',
    ...ec,
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
    '-subj',
    `/CN=${SERVER_NAME}`,
  );
  writeFileSync(
    file('server.ext'),
    `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('server.crt'),
    '-days',
    '2',
    '-extfile',
    file('server.ext'),
  );
  return { caFile: file('ca.crt'), certFile: file('server.crt'), keyFile: file('server.key') };
}

/** Provisions and deprovisions an instance of the mustache plan through the broker; both succeed. */
async function provisionAndDeprovision(system: SystemProcess): Promise<void> {
  const osb = osbClient(system.url);
  const instancePath = `/v2/service_instances/${randomUUID()}`;
  const accepted = await osb(
    'PUT',
    `${instancePath}?accepts_incomplete=true`,
    provisionBody(SERVICE_ID, PLAN_ID),
  );
  expect(accepted.status).toBe(202);
  const provisioned = await untilSettled(
    osb,
    `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
  );
  expect(provisioned.body.state).toBe('succeeded');
  const gone = await osb(
    'DELETE',
    `${instancePath}?accepts_incomplete=true&service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`,
  );
  expect(gone.status).toBe(202);
  const deprovisioned = await untilSettled(
    osb,
    `${instancePath}/last_operation?operation=${encodeURIComponent(String(gone.body.operation))}`,
  );
  expect(deprovisioned.body.state).toBe('succeeded');
}

const withHelm = describeWithTool(helmTool(helm));

withHelm('the chart’s Temporal connection values, on the production Temporal server', () => {
  let operator: { stop(): Promise<void> };

  beforeAll(async () => {
    operator = await startOperator();
    await installCatalog('examples/mustache');
  });
  afterAll(async () => {
    await operator?.stop();
  });

  test('plain: the broker and the worker reach the frontend at the address and namespace the chart sets', async () => {
    const settings = await systemSettings();
    const temporalEnv = chartTemporalEnv([
      `temporal.address=${env.temporal.address}`,
      `temporal.namespace=${env.temporal.namespace}`,
      `temporal.taskQueue=${settings.taskQueue}`,
    ]);
    expect(temporalEnv).toEqual({
      INTEROP_TEMPORAL_ADDRESS: env.temporal.address,
      INTEROP_TEMPORAL_NAMESPACE: env.temporal.namespace,
      INTEROP_TASK_QUEUE: settings.taskQueue,
    });
    const system = await startProcess('all', { ...settings, extraEnv: temporalEnv });
    try {
      await provisionAndDeprovision(system);
    } finally {
      await system.stop();
    }
  });

  describe('TLS on the frontend', () => {
    let server: TemporalServer;
    let secretDir: string;

    beforeAll(async () => {
      const { postgres } = env.temporal;
      if (!postgres)
        throw new Error('the run has no PostgreSQL cluster: this suite runs on the production server');
      const dir = path.join(env.workDir, unique('temporal-tls'));
      const certs = makeCertificates(path.join(dir, 'pki'));
      // The chart's Secret, as the pod sees it: only the CA.
      secretDir = path.join(dir, 'secret');
      mkdirSync(secretDir);
      execFileSync('cp', [certs.caFile, path.join(secretDir, 'ca.crt')]);
      server = await startTemporalServer({
        workDir: path.join(dir, 'server'),
        postgres,
        database: `temporal_tls_${randomUUID().slice(0, 8)}`,
        tls: { ...certs, serverName: SERVER_NAME },
      });
    }, 180_000);
    afterAll(async () => {
      await server?.stop();
    });

    test('a client without the CA is refused', async () => {
      const connection = await Connection.connect({ address: server.address, connectTimeout: 5000 }).catch(
        (err: unknown) => err,
      );
      if (connection instanceof Connection) {
        try {
          await expect(
            connection.workflowService.describeNamespace({ namespace: server.namespace }),
          ).rejects.toThrow();
        } finally {
          await connection.close();
        }
      } else expect(connection).toBeInstanceOf(Error);
    });

    test('the broker and the worker reach it with the CA and server name of the chart’s values', async () => {
      const settings = await systemSettings();
      const temporalEnv = chartTemporalEnv(
        [
          `temporal.address=${server.address}`,
          `temporal.namespace=${server.namespace}`,
          `temporal.taskQueue=${settings.taskQueue}`,
          'temporal.tls.enabled=true',
          `temporal.tls.serverName=${SERVER_NAME}`,
          'temporal.tls.secretName=temporal-frontend-ca',
        ],
        secretDir,
      );
      expect(temporalEnv).toMatchObject({
        INTEROP_TEMPORAL_TLS: 'true',
        INTEROP_TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
        INTEROP_TEMPORAL_TLS_CA_FILE: path.join(secretDir, 'ca.crt'),
      });
      const system = await startProcess('all', { ...settings, extraEnv: temporalEnv });
      try {
        await provisionAndDeprovision(system);
      } finally {
        await system.stop();
      }
    });
  });
});
