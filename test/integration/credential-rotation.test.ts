/**
 * Credentials rotated without a restart: a broker process reads the OSB API's and the admin API's
 * credentials, the metrics token and the codec endpoint's token from files laid out as the kubelet mounts a Secret; the Secret
 * is rotated twice under it. After each rotation the new credentials are accepted and the ones
 * replaced stay accepted for the overlap (one generation: the second rotation ends the first
 * one's), so the first ones are refused; the process never restarted and never logged a value.
 */
import { readFileSync } from 'node:fs';
import { freePort } from '../../dev/local/processes.js';
import { environment, eventually } from '../support/env.js';
import { SecretVolume } from '../support/secret-volume.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';

type Generation = {
  readonly username: string;
  readonly password: string;
  readonly adminUsername: string;
  readonly adminPassword: string;
  readonly token: string;
  readonly codecToken: string;
};

const generation = (n: number): Generation => ({
  username: `broker-${n}`,
  password: `osb-password-${n}-not-secret`,
  adminUsername: `ops-${n}`,
  adminPassword: `admin-password-${n}-not-secret`,
  token: `metrics-token-${n}-not-secret`,
  codecToken: `codec-token-${n}-not-secret`,
});

const basic = (username: string, password: string) =>
  `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

describe('credentials rotated in their files, without a restart', () => {
  let volume: SecretVolume;
  let broker: SystemProcess;
  let codecPort: number;

  /** The status the broker gives each API for the credentials of generation `g`. */
  async function statuses(g: Generation) {
    const [osb, admin, metrics, codec] = await Promise.all([
      fetch(`${broker.url}/v2/catalog`, {
        headers: { Authorization: basic(g.username, g.password), 'X-Broker-API-Version': '2.17' },
      }),
      fetch(`${broker.url}/admin/instances`, {
        headers: { Authorization: basic(g.adminUsername, g.adminPassword) },
      }),
      fetch(`${broker.metricsUrl}/metrics`, { headers: { Authorization: `Bearer ${g.token}` } }),
      fetch(`http://127.0.0.1:${codecPort}/decode`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${g.codecToken}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ payloads: [] }),
      }),
    ]);
    await Promise.all([osb.text(), admin.text(), metrics.text(), codec.text()]);
    return { osb: osb.status, admin: admin.status, metrics: metrics.status, codec: codec.status };
  }

  const ACCEPTED = { osb: 200, admin: 200, metrics: 200, codec: 200 };
  const REFUSED = { osb: 401, admin: 401, metrics: 401, codec: 401 };

  /** Rotates the Secret to generation `g` and waits until the broker accepts it on every API. */
  async function rotate(g: Generation): Promise<void> {
    volume.write(g);
    await eventually(`the broker accepts ${g.username}`, async () => {
      const seen = await statuses(g);
      return seen.osb === 200 && seen.admin === 200 && seen.metrics === 200 && seen.codec === 200
        ? true
        : undefined;
    });
  }

  beforeAll(async () => {
    volume = new SecretVolume(generation(1), environment().workDir);
    codecPort = await freePort();
    broker = await startProcess(
      'broker',
      await systemSettings({
        INTEROP_BROKER_USERNAME: '',
        INTEROP_BROKER_PASSWORD: '',
        INTEROP_BROKER_USERNAME_FILE: volume.path('username'),
        INTEROP_BROKER_PASSWORD_FILE: volume.path('password'),
        INTEROP_ADMIN_USERNAME_FILE: volume.path('adminUsername'),
        INTEROP_ADMIN_PASSWORD_FILE: volume.path('adminPassword'),
        INTEROP_METRICS_TOKEN_FILE: volume.path('token'),
        INTEROP_CODEC_PORT: String(codecPort),
        INTEROP_CODEC_TOKEN_FILE: volume.path('codecToken'),
        INTEROP_CREDENTIALS_OVERLAP_SECONDS: '3600',
      }),
    );
  });

  afterAll(async () => {
    await broker?.stop();
    volume?.remove();
  });

  test('GIVEN the first Secret WHEN called THEN its credentials are accepted and others refused', async () => {
    expect(await statuses(generation(1))).toEqual(ACCEPTED);
    expect(
      await statuses({
        ...generation(1),
        password: 'wrong',
        adminPassword: 'wrong',
        token: 'wrong',
        codecToken: 'wrong-codec-token-0123',
      }),
    ).toEqual(REFUSED);
    expect(await statuses(generation(2))).toEqual(REFUSED);
  });

  test('GIVEN the Secret rotated WHEN called THEN the new credentials are accepted, and the old ones during the overlap', async () => {
    await rotate(generation(2));
    expect(await statuses(generation(2))).toEqual(ACCEPTED);
    expect(await statuses(generation(1))).toEqual(ACCEPTED);
  });

  test('GIVEN the Secret rotated again WHEN called THEN the first credentials are refused, the second still accepted', async () => {
    await rotate(generation(3));
    expect(await statuses(generation(3))).toEqual(ACCEPTED);
    expect(await statuses(generation(2))).toEqual(ACCEPTED);
    expect(await statuses(generation(1))).toEqual(REFUSED);
  });

  test('GIVEN a rotation to a new user with an empty password WHEN called THEN the last good pair stays, as a whole', async () => {
    volume.write({ ...generation(4), password: '' });
    await eventually('the broker read the empty password', async () => {
      await statuses(generation(4));
      const lines = readFileSync(broker.logFile, 'utf8').split('\n');
      return lines.some(
        (l) =>
          l.includes('cannot be used') &&
          l.includes('INTEROP_BROKER_PASSWORD_FILE') &&
          l.includes('is empty'),
      )
        ? true
        : undefined;
    });
    expect((await statuses(generation(3))).osb).toBe(200);
    expect((await statuses(generation(4))).osb).toBe(401);
    expect((await statuses({ ...generation(4), password: generation(3).password })).osb).toBe(401);
  });

  test('GIVEN a password file that is missing at start WHEN a broker starts THEN it stops with a message naming the setting and the file', async () => {
    const missing = volume.path('no-such-key');
    await expect(
      startProcess(
        'broker',
        await systemSettings({
          INTEROP_BROKER_PASSWORD: '',
          INTEROP_BROKER_PASSWORD_FILE: missing,
        }),
      ),
    ).rejects.toThrow(`INTEROP_BROKER_PASSWORD_FILE: the file ${missing} cannot be read (ENOENT)`);
  });

  test('WHEN the broker is looked at THEN it never restarted and its log holds no credential', () => {
    const log = readFileSync(broker.logFile, 'utf8');
    expect(log.match(/broker listening/g)).toHaveLength(1);
    expect(log).toContain('a credential file changed; its new value is in use');
    expect(log).toContain('a credential file cannot be used; the last value read stays in use');
    for (const n of [1, 2, 3, 4]) {
      for (const value of Object.values(generation(n))) {
        if (value.endsWith('not-secret')) expect(log).not.toContain(value);
      }
    }
  });
});
