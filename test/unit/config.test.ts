/** The configuration from environment variables: defaults, values, and a clear error for a bad one. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ConfigError,
  loadAdminClientConfig,
  loadConfig,
  loadRendererConfig,
  loadWorkerDeploymentTarget,
} from '../../src/config.js';

const base = {
  INTEROP_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
  INTEROP_BROKER_USERNAME: 'broker',
  INTEROP_BROKER_PASSWORD: 'secret',
};

/** Loading `role` with `name=value` throws a ConfigError that names the variable and the value. */
function expectRefused(role: 'broker' | 'worker', name: string, value: string): void {
  const load = () => loadConfig(role, { ...base, [name]: value });
  expect(load).toThrow(ConfigError);
  expect(load).toThrow(new RegExp(`${name}.*"${value}"`));
}

describe('broker connection settings', () => {
  test('GIVEN nothing set WHEN loaded THEN idle connections stay 95 s and a stopping broker drains 5 s', () => {
    const { broker } = loadConfig('broker', base);
    expect(broker.keepAliveMs).toBe(95_000);
    expect(broker.shutdownDelayMs).toBe(5_000);
  });

  test('GIVEN an hour, the limit, WHEN loaded THEN it is used', () => {
    const { broker } = loadConfig('broker', {
      ...base,
      INTEROP_KEEP_ALIVE_SECONDS: '3600',
      INTEROP_SHUTDOWN_DELAY_SECONDS: '3600',
    });
    expect([broker.keepAliveMs, broker.shutdownDelayMs]).toEqual([3_600_000, 3_600_000]);
  });

  test('GIVEN values WHEN loaded THEN they are used, and a drain of 0 s is allowed', () => {
    const { broker } = loadConfig('broker', {
      ...base,
      INTEROP_KEEP_ALIVE_SECONDS: '120',
      INTEROP_SHUTDOWN_DELAY_SECONDS: '0',
    });
    expect(broker.keepAliveMs).toBe(120_000);
    expect(broker.shutdownDelayMs).toBe(0);
  });

  test.each([
    ['INTEROP_KEEP_ALIVE_SECONDS', '0'],
    ['INTEROP_KEEP_ALIVE_SECONDS', 'soon'],
    ['INTEROP_SHUTDOWN_DELAY_SECONDS', '-1'],
    ['INTEROP_SHUTDOWN_DELAY_SECONDS', 'five'],
    // Beyond Node's timer range a drain would silently last 1 ms; an hour is the limit.
    ['INTEROP_SHUTDOWN_DELAY_SECONDS', '3000000'],
    ['INTEROP_KEEP_ALIVE_SECONDS', '3601'],
  ])('GIVEN %s=%s WHEN loaded THEN a ConfigError names the variable and the value', (name, value) => {
    expectRefused('broker', name, value);
  });
});

describe('worker settings', () => {
  test('GIVEN nothing set WHEN loaded THEN a worker advances 100 operations and runs 100 steps at once', () => {
    expect(loadConfig('worker', base).worker).toEqual({ concurrentOperations: 100, concurrentSteps: 100 });
  });

  test('GIVEN values WHEN loaded THEN they are used', () => {
    const { worker } = loadConfig('worker', {
      ...base,
      INTEROP_WORKER_OPERATIONS: '400',
      INTEROP_WORKER_STEPS: '250',
    });
    expect(worker).toEqual({ concurrentOperations: 400, concurrentSteps: 250 });
  });

  test.each([
    ['INTEROP_WORKER_OPERATIONS', '1'],
    ['INTEROP_WORKER_OPERATIONS', '2.5'],
    ['INTEROP_WORKER_STEPS', '0'],
    ['INTEROP_WORKER_STEPS', 'many'],
  ])('GIVEN %s=%s WHEN loaded THEN a ConfigError names the variable and the value', (name, value) => {
    expectRefused('worker', name, value);
  });
});

describe('worker versioning', () => {
  test('GIVEN no build id, or an empty one, WHEN loaded THEN the worker is not versioned', () => {
    expect(loadConfig('worker', base).worker.versioning).toBeUndefined();
    expect(loadConfig('worker', { ...base, INTEROP_WORKER_BUILD_ID: ' ' }).worker.versioning).toBeUndefined();
  });

  test('GIVEN a build id WHEN loaded THEN the deployment is named after the task queue', () => {
    expect(loadConfig('worker', { ...base, INTEROP_WORKER_BUILD_ID: '1.4.2' }).worker.versioning).toEqual({
      deploymentName: 'interoperator',
      buildId: '1.4.2',
    });
    const env = { ...base, INTEROP_WORKER_BUILD_ID: 'v2', INTEROP_TASK_QUEUE: 'broker.prod/eu' };
    expect(loadConfig('worker', env).worker.versioning).toEqual({
      deploymentName: 'broker-prod-eu',
      buildId: 'v2',
    });
  });

  test('GIVEN a deployment name WHEN loaded THEN it is used', () => {
    const env = { ...base, INTEROP_WORKER_BUILD_ID: 'abc123', INTEROP_WORKER_DEPLOYMENT: 'osb-eu' };
    expect(loadConfig('worker', env).worker.versioning).toEqual({
      deploymentName: 'osb-eu',
      buildId: 'abc123',
    });
  });

  test.each([
    ['INTEROP_WORKER_BUILD_ID', '1.4/2'],
    ['INTEROP_WORKER_BUILD_ID', '-rc1'],
    ['INTEROP_WORKER_BUILD_ID', 'x'.repeat(129)],
  ])('GIVEN %s=%s WHEN loaded THEN a ConfigError names the variable and the value', (name, value) => {
    expectRefused('worker', name, value);
  });

  test('GIVEN a deployment name with a dot WHEN loaded THEN it is refused: the dot separates the build id', () => {
    const load = () =>
      loadConfig('worker', { ...base, INTEROP_WORKER_BUILD_ID: 'v1', INTEROP_WORKER_DEPLOYMENT: 'osb.eu' });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/INTEROP_WORKER_DEPLOYMENT.*"osb.eu"/);
  });

  test('GIVEN INTEROP_WORKFLOW_BUNDLE WHEN loaded THEN the worker loads that bundle', () => {
    expect(loadConfig('worker', { ...base, INTEROP_WORKFLOW_BUNDLE: '/b/w.js' }).worker.workflowBundle).toBe(
      '/b/w.js',
    );
  });

  test('GIVEN the workers’ settings and no payload keys WHEN the command line’s target is loaded THEN it is their deployment', () => {
    expect(
      loadWorkerDeploymentTarget({
        INTEROP_TEMPORAL_ADDRESS: 'temporal:7233',
        INTEROP_TEMPORAL_NAMESPACE: 'osb',
        INTEROP_TASK_QUEUE: 'osb-eu',
      }),
    ).toEqual({ temporal: { address: 'temporal:7233', namespace: 'osb' }, deploymentName: 'osb-eu' });
  });
});

describe('a worker for one cluster alone', () => {
  const derivedFor = (clusterId: string) => ({
    INTEROP_PAYLOAD_KEYS: `k2@${clusterId}:${Buffer.alloc(32, 2).toString('base64')},k1@${clusterId}:${Buffer.alloc(32, 1).toString('base64')}`,
  });

  test('GIVEN nothing set WHEN loaded THEN the worker serves the landscape', () => {
    expect(loadConfig('worker', base).cluster).toBeUndefined();
  });

  test('GIVEN INTEROP_CLUSTER_ID and its kubeconfig WHEN loaded THEN the worker serves that cluster', () => {
    const env = {
      ...base,
      ...derivedFor('2'),
      INTEROP_CLUSTER_ID: '2',
      INTEROP_CLUSTER_KUBECONFIG: '/etc/sister/kubeconfig',
    };
    expect(loadConfig('worker', env).cluster).toEqual({ id: '2', kubeconfig: '/etc/sister/kubeconfig' });
    expect(loadConfig('worker', env).temporal.payloadKeys.map((k) => k.id)).toEqual(['k2@2', 'k1@2']);
    expect(loadConfig('worker', { ...base, ...derivedFor('3'), INTEROP_CLUSTER_ID: '3' }).cluster).toEqual({
      id: '3',
    });
  });

  test.each([
    ['the master keys', base.INTEROP_PAYLOAD_KEYS, /key "k1" is not derived for cluster 2/],
    [
      'another cluster’s keys',
      derivedFor('3').INTEROP_PAYLOAD_KEYS,
      /key "k2@3" is not derived for cluster 2/,
    ],
    [
      'its keys and a master key',
      `${derivedFor('2').INTEROP_PAYLOAD_KEYS},${base.INTEROP_PAYLOAD_KEYS}`,
      /key "k1" is not derived for cluster 2/,
    ],
  ])(
    'GIVEN %s WHEN the worker of cluster 2 is loaded THEN it is refused, saying how to derive its own',
    (_, keys, why) => {
      const load = () =>
        loadConfig('worker', { ...base, INTEROP_PAYLOAD_KEYS: keys, INTEROP_CLUSTER_ID: '2' });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(why);
      expect(load).toThrow(/interoperator payload-key derive --cluster 2/);
    },
  );

  test.each(['broker', 'worker', 'all'] as const)(
    'GIVEN a key derived for a cluster WHEN a landscape %s is loaded THEN it is refused: the landscape holds the master keys',
    (role) => {
      const load = () => loadConfig(role, { ...base, ...derivedFor('2') });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(/INTEROP_PAYLOAD_KEYS: key "k2@2" is a key derived for cluster 2/);
    },
  );

  test.each(['broker', 'all'] as const)(
    'GIVEN INTEROP_CLUSTER_ID WHEN a %s is loaded THEN it is refused',
    (role) => {
      const load = () => loadConfig(role, { ...base, INTEROP_CLUSTER_ID: '2' });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(/INTEROP_CLUSTER_ID is for a worker of one cluster/);
    },
  );

  test('GIVEN the master’s id WHEN loaded THEN it is refused: the landscape’s workers serve the master', () => {
    expect(() => loadConfig('worker', { ...base, INTEROP_CLUSTER_ID: '1' })).toThrow(/1 is the master/);
    expect(() =>
      loadConfig('worker', { ...base, INTEROP_MASTER_CLUSTER_ID: 'm', INTEROP_CLUSTER_ID: 'm' }),
    ).toThrow(/m is the master/);
  });
});

describe('tracing', () => {
  test('GIVEN no OTEL_EXPORTER_OTLP_ENDPOINT, or an empty one, WHEN loaded THEN no tracing', () => {
    expect(loadConfig('broker', base).tracing).toBeUndefined();
    expect(loadConfig('broker', { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: '' }).tracing).toBeUndefined();
  });

  test.each([
    ['broker', 'interoperator-broker'],
    ['worker', 'interoperator-worker'],
    ['all', 'interoperator'],
  ] as const)('GIVEN an endpoint WHEN %s loads THEN traced as %s', (role, serviceName) => {
    expect(
      loadConfig(role, { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing,
    ).toEqual({
      endpoint: 'http://collector:4318',
      serviceName,
    });
  });

  test('GIVEN OTEL_SERVICE_NAME WHEN loaded THEN it names the service', () => {
    expect(
      loadConfig('worker', {
        ...base,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example',
        OTEL_SERVICE_NAME: 'broker-eu10',
      }).tracing?.serviceName,
    ).toBe('broker-eu10');
  });

  test.each(['collector:4318', 'grpc://collector:4317', 'not a url'])(
    'GIVEN OTEL_EXPORTER_OTLP_ENDPOINT=%s WHEN loaded THEN a ConfigError names the variable and the value',
    (value) => {
      expectRefused('broker', 'OTEL_EXPORTER_OTLP_ENDPOINT', value);
    },
  );
});

describe('log level', () => {
  test('GIVEN nothing set, or an empty value, WHEN loaded THEN info', () => {
    expect(loadConfig('worker', base).logLevel).toBe('info');
    expect(loadConfig('worker', { ...base, INTEROP_LOG_LEVEL: '' }).logLevel).toBe('info');
  });

  test.each(['debug', 'info', 'warn', 'error'])(
    'GIVEN INTEROP_LOG_LEVEL=%s WHEN loaded THEN it is used',
    (level) => {
      expect(loadConfig('broker', { ...base, INTEROP_LOG_LEVEL: level }).logLevel).toBe(level);
    },
  );

  test.each(['verbose', 'INFO'])(
    'GIVEN INTEROP_LOG_LEVEL=%s WHEN loaded THEN a ConfigError names the variable and the value',
    (value) => {
      expectRefused('broker', 'INTEROP_LOG_LEVEL', value);
    },
  );
});

describe('scheduler settings', () => {
  test('GIVEN nothing set WHEN loaded THEN every instance goes to the master', () => {
    expect(loadConfig('worker', base).scheduling).toEqual({ scheduler: 'default' });
  });
  test('GIVEN a scheduler and per-plan overrides WHEN loaded THEN they are used', () => {
    const { scheduling } = loadConfig('worker', {
      ...base,
      INTEROP_SCHEDULER: 'least-utilized',
      INTEROP_PLAN_SCHEDULERS: 'small=round-robin, large=resource-aware',
    });
    expect(scheduling).toEqual({
      scheduler: 'least-utilized',
      plans: { small: 'round-robin', large: 'resource-aware' },
    });
  });
  test.each([
    ['INTEROP_SCHEDULER', 'fastest'],
    ['INTEROP_PLAN_SCHEDULERS', 'small=fastest'],
  ])('GIVEN %s=%s WHEN loaded THEN refused', (name, value) => {
    const load = () => loadConfig('worker', { ...base, [name]: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(new RegExp(`${name}.*fastest`));
  });
});

describe('renderer settings', () => {
  test('GIVEN the helm settings WHEN loaded THEN the helm build and the chart limits', () => {
    expect(
      loadRendererConfig({
        INTEROP_HELM_WASM: '/opt/renderer/helm.wasm',
        INTEROP_HELM_CHART_MAX_BYTES: '1048576',
        INTEROP_HELM_CHART_TIMEOUT_SECONDS: '2.5',
      }),
    ).toEqual({ helmWasmFile: '/opt/renderer/helm.wasm', chart: { maxBytes: 1048576, timeoutMs: 2500 } });
    expect(() => loadRendererConfig({ INTEROP_HELM_CHART_MAX_BYTES: '1.5' })).toThrow(
      'INTEROP_HELM_CHART_MAX_BYTES must be a whole number, 1 or more, not "1.5"',
    );
  });

  test('GIVEN nothing set WHEN loaded THEN the renderer uses the build beside the code', () => {
    expect(loadConfig('worker', base).renderer).toEqual({});
    expect(loadRendererConfig({})).toEqual({});
  });

  test('GIVEN INTEROP_GOTEMPLATE_WASM WHEN loaded THEN the renderer uses that build, without any other setting', () => {
    const wasmFile = '/opt/renderer/gotemplate.wasm';
    expect(loadConfig('worker', { ...base, INTEROP_GOTEMPLATE_WASM: wasmFile }).renderer).toEqual({
      wasmFile,
    });
    expect(loadRendererConfig({ INTEROP_GOTEMPLATE_WASM: wasmFile })).toEqual({ wasmFile });
  });
});

describe('admin API credentials', () => {
  const admin = { INTEROP_ADMIN_USERNAME: 'ops', INTEROP_ADMIN_PASSWORD: 'other-secret' };

  test('GIVEN none WHEN loaded THEN the broker has no admin credentials (the admin API accepts no one)', () => {
    expect(loadConfig('broker', base).broker.admin).toBeUndefined();
  });

  test('GIVEN both WHEN loaded THEN the broker accepts them, and the command line reads them with the URL', () => {
    expect(loadConfig('all', { ...base, ...admin }).broker.admin).toEqual({
      username: { name: 'INTEROP_ADMIN_USERNAME', value: 'ops' },
      password: { name: 'INTEROP_ADMIN_PASSWORD', value: 'other-secret' },
    });
    expect(loadAdminClientConfig({ ...admin, INTEROP_ADMIN_URL: 'http://broker:8080' })).toEqual({
      url: 'http://broker:8080',
      username: 'ops',
      password: 'other-secret',
    });
    expect(loadAdminClientConfig({})).toEqual({});
  });

  test.each([
    [{ INTEROP_ADMIN_USERNAME: 'ops' }, /set together, or neither/],
    [{ INTEROP_ADMIN_PASSWORD: 'other-secret' }, /set together, or neither/],
    [
      { INTEROP_ADMIN_USERNAME: 'broker', INTEROP_ADMIN_PASSWORD: 'secret' },
      /must differ from the OSB credentials/,
    ],
    [
      { INTEROP_ADMIN_USERNAME: 'ops', INTEROP_ADMIN_USERNAME_FILE: '/s/u', INTEROP_ADMIN_PASSWORD: 'x' },
      /INTEROP_ADMIN_USERNAME and INTEROP_ADMIN_USERNAME_FILE are set: set one of them/,
    ],
    [{ INTEROP_ADMIN_PASSWORD_FILE: '/s/p' }, /set together, or neither/],
  ])('GIVEN %j WHEN the broker loads THEN it refuses', (env, error) => {
    expect(() => loadConfig('broker', { ...base, ...env })).toThrow(error);
  });
});

describe('credentials from files', () => {
  const files = {
    INTEROP_PAYLOAD_KEYS: base.INTEROP_PAYLOAD_KEYS,
    INTEROP_BROKER_USERNAME_FILE: '/etc/interoperator/auth/username',
    INTEROP_BROKER_PASSWORD_FILE: '/etc/interoperator/auth/password',
  };

  test('GIVEN _FILE settings WHEN loaded THEN the broker reads its credentials from those files', () => {
    const config = loadConfig('broker', {
      ...files,
      INTEROP_ADMIN_USERNAME_FILE: '/etc/interoperator/auth/adminUsername',
      INTEROP_ADMIN_PASSWORD: 'given',
      INTEROP_METRICS_TOKEN_FILE: '/etc/interoperator/metrics/token',
    });
    expect(config.broker.credentials).toEqual({
      username: { name: 'INTEROP_BROKER_USERNAME_FILE', file: '/etc/interoperator/auth/username' },
      password: { name: 'INTEROP_BROKER_PASSWORD_FILE', file: '/etc/interoperator/auth/password' },
    });
    expect(config.broker.admin).toEqual({
      username: { name: 'INTEROP_ADMIN_USERNAME_FILE', file: '/etc/interoperator/auth/adminUsername' },
      password: { name: 'INTEROP_ADMIN_PASSWORD', value: 'given' },
    });
    expect(config.metrics.token).toEqual({
      name: 'INTEROP_METRICS_TOKEN_FILE',
      file: '/etc/interoperator/metrics/token',
    });
  });

  test('GIVEN nothing WHEN loaded THEN replaced credentials stay accepted 5 minutes; the overlap is a setting', () => {
    expect(loadConfig('broker', files).credentialOverlapMs).toBe(300_000);
    expect(
      loadConfig('broker', { ...files, INTEROP_CREDENTIALS_OVERLAP_SECONDS: '0' }).credentialOverlapMs,
    ).toBe(0);
    expect(() => loadConfig('broker', { ...files, INTEROP_CREDENTIALS_OVERLAP_SECONDS: '-1' })).toThrow(
      /INTEROP_CREDENTIALS_OVERLAP_SECONDS/,
    );
  });

  test('GIVEN neither the value nor the file WHEN the broker loads THEN the error names both', () => {
    const { INTEROP_BROKER_PASSWORD_FILE: _, ...withoutPassword } = files;
    expect(() => loadConfig('broker', withoutPassword)).toThrow(
      'INTEROP_BROKER_PASSWORD (or INTEROP_BROKER_PASSWORD_FILE) is not set',
    );
  });
});

describe('one home for the environment', () => {
  /** Every TypeScript and JavaScript file under src/. */
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) return sources(file);
      return /\.(ts|mjs|js)$/.test(entry.name) ? [file] : [];
    });

  test('no module of src/ but config.ts reads the environment', () => {
    const readers = sources('src')
      .filter((file) => file !== path.join('src', 'config.ts'))
      .filter((file) => /process\.env\b/.test(readFileSync(file, 'utf8')));
    expect(readers).toEqual([]);
  });
});

describe('codec endpoint settings', () => {
  const token = 'codec-token-0123456789';

  test('GIVEN no codec port WHEN loaded THEN there is no codec endpoint', () => {
    expect(loadConfig('broker', base).codec).toBeUndefined();
  });

  test('GIVEN a port, a token and origins WHEN loaded THEN they are used, origins normalised', () => {
    const { codec } = loadConfig('broker', {
      ...base,
      INTEROP_CODEC_PORT: '8081',
      INTEROP_CODEC_TOKEN: token,
      INTEROP_CODEC_ORIGINS: 'https://ui.example.com, http://127.0.0.1:8233/',
    });
    expect(codec).toEqual({
      port: 8081,
      token: { name: 'INTEROP_CODEC_TOKEN', value: token },
      origins: ['https://ui.example.com', 'http://127.0.0.1:8233'],
    });
  });

  test('GIVEN the token as a file WHEN loaded THEN the file is the setting (read, and checked, by the broker)', () => {
    const { codec } = loadConfig('broker', {
      ...base,
      INTEROP_CODEC_PORT: '8081',
      INTEROP_CODEC_TOKEN_FILE: '/etc/interoperator/codec/token',
    });
    expect(codec?.token).toEqual({
      name: 'INTEROP_CODEC_TOKEN_FILE',
      file: '/etc/interoperator/codec/token',
    });
  });

  test('GIVEN a worker WHEN loaded with a codec port THEN it has no codec endpoint (the broker serves it)', () => {
    expect(loadConfig('worker', { ...base, INTEROP_CODEC_PORT: '8081' }).codec).toBeUndefined();
  });

  test.each([
    [
      'no token',
      { INTEROP_CODEC_PORT: '8081' },
      /INTEROP_CODEC_TOKEN \(or INTEROP_CODEC_TOKEN_FILE\) is not set/,
    ],
    [
      'a token and a token file',
      { INTEROP_CODEC_PORT: '8081', INTEROP_CODEC_TOKEN: token, INTEROP_CODEC_TOKEN_FILE: '/t' },
      /INTEROP_CODEC_TOKEN and INTEROP_CODEC_TOKEN_FILE are set/,
    ],
    [
      'a short token',
      { INTEROP_CODEC_PORT: '8081', INTEROP_CODEC_TOKEN: 'short' },
      /INTEROP_CODEC_TOKEN must be 16/,
    ],
    [
      'a token with a slash',
      { INTEROP_CODEC_PORT: '8081', INTEROP_CODEC_TOKEN: `${token}/x` },
      /INTEROP_CODEC_TOKEN must be 16/,
    ],
    [
      'the OSB port',
      { INTEROP_CODEC_PORT: '8080', INTEROP_CODEC_TOKEN: token },
      /must differ from INTEROP_PORT/,
    ],
    [
      'the OSB port set elsewhere',
      { INTEROP_PORT: '9000', INTEROP_CODEC_PORT: '9000', INTEROP_CODEC_TOKEN: token },
      /must differ from INTEROP_PORT/,
    ],
    [
      'a wildcard origin',
      { INTEROP_CODEC_PORT: '8081', INTEROP_CODEC_TOKEN: token, INTEROP_CODEC_ORIGINS: '*' },
      /INTEROP_CODEC_ORIGINS: "\*" is not an origin/,
    ],
    [
      'an origin with a path',
      {
        INTEROP_CODEC_PORT: '8081',
        INTEROP_CODEC_TOKEN: token,
        INTEROP_CODEC_ORIGINS: 'https://ui.example.com/x',
      },
      /is not an origin/,
    ],
    [
      'a port that is no number',
      { INTEROP_CODEC_PORT: 'x', INTEROP_CODEC_TOKEN: token },
      /INTEROP_CODEC_PORT/,
    ],
  ])('GIVEN %s WHEN loaded THEN a ConfigError says what is wrong', (_, env, message) => {
    const load = () => loadConfig('broker', { ...base, ...env });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(message);
  });
});

describe('the operations port', () => {
  test('GIVEN nothing set WHEN loaded THEN it listens on 127.0.0.1:9090, /metrics open', () => {
    expect(loadConfig('worker', base).metrics).toEqual({
      host: '127.0.0.1',
      port: 9090,
      recordStates: false,
    });
  });

  test('GIVEN values WHEN loaded THEN they are used', () => {
    const { metrics } = loadConfig('broker', {
      ...base,
      INTEROP_METRICS_HOST: '0.0.0.0',
      INTEROP_METRICS_PORT: '9102',
      INTEROP_METRICS_TOKEN: 'scrape-me',
      INTEROP_METRICS_RECORD_STATES: 'true',
    });
    expect(metrics).toEqual({
      host: '0.0.0.0',
      port: 9102,
      token: { name: 'INTEROP_METRICS_TOKEN', value: 'scrape-me' },
      recordStates: true,
    });
  });

  test.each(['0', '65536', '90.5', 'http'])(
    'GIVEN INTEROP_METRICS_PORT=%s WHEN loaded THEN it is refused',
    (value) => {
      expectRefused('worker', 'INTEROP_METRICS_PORT', value);
    },
  );
});

describe('the entitlement service', () => {
  test('GIVEN no URL WHEN loaded THEN no service is asked', () => {
    expect(loadConfig('broker', base).quotaWebhook).toBeUndefined();
  });

  test('GIVEN a URL alone WHEN loaded THEN it waits 5 s and refuses without an answer', () => {
    expect(
      loadConfig('broker', { ...base, INTEROP_QUOTA_WEBHOOK_URL: 'https://entitlements.example/check' })
        .quotaWebhook,
    ).toEqual({
      url: 'https://entitlements.example/check',
      protocol: 'entitlement',
      timeoutMs: 5000,
      failurePolicy: 'refuse',
    });
  });

  test('GIVEN all four WHEN loaded THEN they are used', () => {
    const env = {
      ...base,
      INTEROP_QUOTA_WEBHOOK_URL: 'http://127.0.0.1:9000/',
      INTEROP_QUOTA_WEBHOOK_PROTOCOL: 'service-fabrik',
      INTEROP_QUOTA_WEBHOOK_TIMEOUT_SECONDS: '0.5',
      INTEROP_QUOTA_WEBHOOK_FAILURE_POLICY: 'allow',
    };
    expect(loadConfig('broker', env).quotaWebhook).toEqual({
      url: 'http://127.0.0.1:9000/',
      protocol: 'service-fabrik',
      timeoutMs: 500,
      failurePolicy: 'allow',
    });
  });

  test.each([
    ['INTEROP_QUOTA_WEBHOOK_FAILURE_POLICY', 'ignore'],
    ['INTEROP_QUOTA_WEBHOOK_PROTOCOL', 'quota-app'],
    ['INTEROP_QUOTA_WEBHOOK_TIMEOUT_SECONDS', '0'],
  ])('GIVEN %s=%s WHEN loaded THEN it is refused, naming both', (name, value) => {
    const load = () =>
      loadConfig('broker', { ...base, INTEROP_QUOTA_WEBHOOK_URL: 'http://127.0.0.1:9000/', [name]: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(new RegExp(`${name}.*"${value}"`));
  });

  test('GIVEN a URL that is not http WHEN loaded THEN it is refused without repeating it', () => {
    const load = () => loadConfig('broker', { ...base, INTEROP_QUOTA_WEBHOOK_URL: 'ftp://user:pw@host/' });
    expect(load).toThrow('INTEROP_QUOTA_WEBHOOK_URL must be an http or https URL');
    expect(load).not.toThrow(/pw/);
  });
});

describe('the connection to Temporal', () => {
  test('GIVEN nothing set WHEN loaded THEN plain, without an API key', () => {
    const { temporal } = loadConfig('worker', base);
    expect([temporal.tls, temporal.apiKey]).toEqual([undefined, undefined]);
  });

  test('GIVEN INTEROP_TEMPORAL_TLS=true alone WHEN loaded THEN TLS with the system’s CAs', () => {
    expect(loadConfig('worker', { ...base, INTEROP_TEMPORAL_TLS: 'true' }).temporal.tls).toEqual({});
  });

  test('GIVEN a CA, a server name and a client certificate WHEN loaded THEN mutual TLS with them', () => {
    const { temporal } = loadConfig('worker', {
      ...base,
      INTEROP_TEMPORAL_TLS_CA_FILE: '/tls/ca.crt',
      INTEROP_TEMPORAL_TLS_SERVER_NAME: 'temporal.example.com',
      INTEROP_TEMPORAL_TLS_CERT_FILE: '/tls/tls.crt',
      INTEROP_TEMPORAL_TLS_KEY_FILE: '/tls/tls.key',
    });
    expect(temporal.tls).toEqual({
      caFile: '/tls/ca.crt',
      serverName: 'temporal.example.com',
      clientCert: { certFile: '/tls/tls.crt', keyFile: '/tls/tls.key' },
    });
  });

  test('GIVEN an API key WHEN loaded THEN it is sent over TLS', () => {
    const { temporal } = loadConfig('worker', { ...base, INTEROP_TEMPORAL_API_KEY: 'key-not-secret' });
    expect([temporal.tls, temporal.apiKey]).toEqual([{}, 'key-not-secret']);
  });

  test('GIVEN a certificate without its key, TLS off with a CA, or a flag not true/false WHEN loaded THEN refused, saying why', () => {
    expect(() => loadConfig('worker', { ...base, INTEROP_TEMPORAL_TLS_CERT_FILE: '/tls/tls.crt' })).toThrow(
      /INTEROP_TEMPORAL_TLS_CERT_FILE and INTEROP_TEMPORAL_TLS_KEY_FILE are set together/,
    );
    expect(() =>
      loadConfig('worker', {
        ...base,
        INTEROP_TEMPORAL_TLS: 'false',
        INTEROP_TEMPORAL_TLS_CA_FILE: '/tls/ca.crt',
      }),
    ).toThrow(/INTEROP_TEMPORAL_TLS is false, but/);
    expectRefused('worker', 'INTEROP_TEMPORAL_TLS', 'yes');
  });
});

describe('OSB authentication and binding metadata', () => {
  const { INTEROP_BROKER_USERNAME: _u, INTEROP_BROKER_PASSWORD: _p, ...noCredentials } = base;

  test('GIVEN nothing set THEN Basic auth, and bind answers carry their metadata', () => {
    const { broker } = loadConfig('broker', base);
    expect([broker.osbAuth, broker.sendBindingMetadata]).toEqual([{ kind: 'basic' }, true]);
  });

  test('GIVEN client-certificate with a subject THEN it is taken, and no Basic credentials are needed', () => {
    const { broker } = loadConfig('broker', {
      ...noCredentials,
      INTEROP_OSB_AUTH: 'client-certificate',
      INTEROP_OSB_CLIENT_SUBJECT: '/C=DE/O=Example/CN=sm',
      INTEROP_SEND_BINDING_METADATA: 'false',
    });
    expect([broker.osbAuth, broker.sendBindingMetadata]).toEqual([
      { kind: 'client-certificate', subject: '/C=DE/O=Example/CN=sm' },
      false,
    ]);
  });

  test.each<[string, Record<string, string>, RegExp]>([
    [
      'client-certificate without a subject',
      { INTEROP_OSB_AUTH: 'client-certificate' },
      /INTEROP_OSB_CLIENT_SUBJECT is required/,
    ],
    [
      'a subject without client-certificate',
      { INTEROP_OSB_CLIENT_SUBJECT: 'CN=sm' },
      /is not client-certificate/,
    ],
    [
      'another mode',
      { INTEROP_OSB_AUTH: 'mtls' },
      /INTEROP_OSB_AUTH must be basic or client-certificate, not "mtls"/,
    ],
  ])('GIVEN %s THEN a ConfigError says what to set', (_name, env, message) => {
    expect(() => loadConfig('broker', { ...base, ...env })).toThrow(message);
  });
});
