/** The settings of the cluster registry and its health workflow. */
import { ConfigError, loadConfig } from '../../src/config.js';

const base = { INTEROP_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}` };

describe('cluster health settings', () => {
  test('GIVEN nothing set WHEN loaded THEN probes every 30 s, offline after 120 s, running again after answering for 60 s, never evacuates, the master is `1`', () => {
    const config = loadConfig('worker', base);
    expect(config.clusterHealth).toEqual({
      probeSeconds: 30,
      offlineSeconds: 120,
      stabilizationSeconds: 60,
      evacuateAfterSeconds: 0,
      evacuationConcurrency: 5,
    });
    expect(config.masterClusterId).toBe('1');
  });

  test('GIVEN values WHEN loaded THEN they are used; 0 turns the probes off', () => {
    const config = loadConfig('worker', {
      ...base,
      INTEROP_CLUSTER_PROBE_SECONDS: '0',
      INTEROP_CLUSTER_OFFLINE_SECONDS: '45',
      INTEROP_CLUSTER_STABILIZATION_SECONDS: '0',
      INTEROP_CLUSTER_EVACUATE_AFTER_SECONDS: '600',
      INTEROP_CLUSTER_EVACUATION_CONCURRENCY: '2',
      INTEROP_MASTER_CLUSTER_ID: 'primary',
    });
    expect(config.clusterHealth).toEqual({
      probeSeconds: 0,
      offlineSeconds: 45,
      stabilizationSeconds: 0,
      evacuateAfterSeconds: 600,
      evacuationConcurrency: 2,
    });
    expect(config.masterClusterId).toBe('primary');
  });

  test.each([
    ['INTEROP_CLUSTER_PROBE_SECONDS', '-1'],
    ['INTEROP_CLUSTER_PROBE_SECONDS', 'often'],
    ['INTEROP_CLUSTER_OFFLINE_SECONDS', '0'],
    ['INTEROP_CLUSTER_STABILIZATION_SECONDS', '-5'],
    ['INTEROP_CLUSTER_EVACUATE_AFTER_SECONDS', '-1'],
    ['INTEROP_CLUSTER_EVACUATION_CONCURRENCY', '0'],
  ])('GIVEN %s=%s WHEN loaded THEN refused, naming the variable', (name, value) => {
    const load = () => loadConfig('worker', { ...base, [name]: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(new RegExp(`${name}.*"${value}"`));
  });
});
