import { silentLogger } from '../../../src/log.js';
import { prepareMonitoring, type Monitoring } from '../../../src/roots/monitoring.js';

describe('the operations port of a process', () => {
  let monitoring: Monitoring | undefined;
  afterEach(async () => {
    await monitoring?.stop();
    monitoring = undefined;
  });

  test('GIVEN a broker alone WHEN prepared THEN it has no worker metrics and no SDK exporter', async () => {
    monitoring = await prepareMonitoring('broker', { host: '127.0.0.1', port: 9090 }, silentLogger);
    expect(monitoring.worker).toBeUndefined();
    expect(monitoring.telemetryOptions).toBeUndefined();
  });

  test('GIVEN a worker WHEN prepared THEN the SDK exports its metrics on a loopback port', async () => {
    monitoring = await prepareMonitoring('worker', { host: '127.0.0.1', port: 9090 }, silentLogger);
    expect(monitoring.worker).toBeDefined();
    expect(monitoring.telemetryOptions).toEqual({
      metrics: { prometheus: { bindAddress: expect.stringMatching(/^127\.0\.0\.1:\d+$/) } },
    });
  });

  test('GIVEN readiness checks WHEN probed THEN ready only once there are some and all hold', async () => {
    monitoring = await prepareMonitoring('broker', { host: '127.0.0.1', port: 0 }, silentLogger);
    const { url } = await monitoring.listen();
    const readyz = async () => (await fetch(`${url}/readyz`)).status;
    expect(await readyz()).toBe(503);
    let broker = true;
    let worker = false;
    monitoring.readiness(() => broker);
    expect(await readyz()).toBe(200);
    monitoring.readiness(() => worker);
    expect(await readyz()).toBe(503);
    worker = true;
    expect(await readyz()).toBe(200);
    broker = false;
    expect(await readyz()).toBe(503);
    expect((await fetch(`${url}/livez`)).status).toBe(200);
  });

  test('GIVEN a token WHEN /metrics is scraped THEN it needs the token and shows the process metrics', async () => {
    monitoring = await prepareMonitoring(
      'broker',
      { host: '127.0.0.1', port: 0, token: { name: 'INTEROP_METRICS_TOKEN', value: 't0ken' } },
      silentLogger,
    );
    const { url } = await monitoring.listen();
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    const res = await fetch(`${url}/metrics`, { headers: { Authorization: 'Bearer t0ken' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('process_cpu_user_seconds_total');
  });
});
