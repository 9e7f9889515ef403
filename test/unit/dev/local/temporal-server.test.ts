/** The production Temporal server's configuration file, as the local environment writes it. */
import { HISTORY_SHARDS, serverConfig } from '../../../../dev/local/temporal-server.js';

const ports = {
  frontend: 41001,
  frontendHttp: 41002,
  frontendMembership: 21001,
  history: 41003,
  historyMembership: 21002,
  matching: 41004,
  matchingMembership: 21003,
  worker: 41005,
  workerMembership: 21004,
};
const postgres = { host: '127.0.0.1', port: 45432, user: 'temporal' };

describe('the Temporal server configuration', () => {
  test('GIVEN PostgreSQL WHEN configured THEN both stores on postgres12, several shards, every service on 127.0.0.1', () => {
    const config = serverConfig({ ports, postgres, database: 'temporal', dynamicConfigFile: '/run/dc.yaml' });
    expect(HISTORY_SHARDS).toBeGreaterThanOrEqual(4);
    expect(config.persistence).toMatchObject({
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: HISTORY_SHARDS,
      datastores: {
        default: {
          sql: { pluginName: 'postgres12', databaseName: 'temporal', connectAddr: '127.0.0.1:45432' },
        },
        visibility: {
          sql: { pluginName: 'postgres12', databaseName: 'temporal_visibility', user: 'temporal' },
        },
      },
    });
    expect(config.services).toEqual({
      frontend: { rpc: { grpcPort: 41001, membershipPort: 21001, bindOnIP: '127.0.0.1', httpPort: 41002 } },
      history: { rpc: { grpcPort: 41003, membershipPort: 21002, bindOnIP: '127.0.0.1' } },
      matching: { rpc: { grpcPort: 41004, membershipPort: 21003, bindOnIP: '127.0.0.1' } },
      worker: { rpc: { grpcPort: 41005, membershipPort: 21004, bindOnIP: '127.0.0.1' } },
    });
    expect(config.global).not.toHaveProperty('tls');
    expect(config.dynamicConfigClient).toMatchObject({ filepath: '/run/dc.yaml' });
  });

  test('GIVEN TLS WHEN configured THEN the frontend serves the certificate and the worker service trusts its CA', () => {
    const tls = {
      certFile: '/pki/server.crt',
      keyFile: '/pki/server.key',
      caFile: '/pki/ca.crt',
      serverName: 'temporal.test',
    };
    const config = serverConfig({
      ports,
      postgres,
      database: 'temporal',
      dynamicConfigFile: '/run/dc.yaml',
      tls,
    });
    expect(config.global).toMatchObject({
      tls: {
        frontend: {
          server: { certFile: '/pki/server.crt', keyFile: '/pki/server.key', requireClientAuth: false },
          client: { serverName: 'temporal.test', rootCaFiles: ['/pki/ca.crt'] },
        },
      },
    });
  });
});
