/** The dev tooling's environment variables: defaults, values, and a clear error for a bad port. */
import os from 'node:os';
import path from 'node:path';
import {
  binaryOverrides,
  cacheDir,
  DevSettingsError,
  devStackSettings,
  existingServers,
  postgresBinDir,
  temporalKind,
} from '../../../dev/settings.js';

describe('the dev tooling settings', () => {
  test('GIVEN nothing set WHEN read THEN the cache in the home folder, no existing servers, the fixed dev ports', () => {
    const cache = path.join(os.homedir(), '.cache', 'interoperator');
    expect(cacheDir({})).toBe(cache);
    expect(binaryOverrides({})).toEqual({});
    expect(existingServers({})).toEqual({ temporalNamespace: 'default', sisterKubeconfigs: [] });
    expect(devStackSettings({})).toEqual({
      workDir: path.join(cache, 'dev-stack'),
      temporalPort: 7233,
      temporalUiPort: 8233,
      codecPort: 8081,
      brokerUsername: 'broker',
      adminUsername: 'admin',
    });
  });

  test('GIVEN values WHEN read THEN they are used; an empty value counts as unset', () => {
    const env = {
      INTEROP_CACHE_DIR: '/cache',
      TEMPORAL_CLI: '/bin/temporal',
      KUBE_APISERVER_BIN: '',
      INTEROP_TEMPORAL_ADDRESS: '127.0.0.1:7000',
      INTEROP_TEMPORAL_NAMESPACE: 'ns',
      INTEROP_MASTER_KUBECONFIG: '/k/master',
      INTEROP_SISTER_KUBECONFIGS: '/k/a,,/k/b',
      INTEROP_TEMPORAL_PORT: '7000',
      INTEROP_TEMPORAL_UI_PORT: '',
      INTEROP_BROKER_PASSWORD: 'secret',
      INTEROP_ADMIN_USERNAME: 'ops',
      INTEROP_ADMIN_PASSWORD: 'admin-secret',
      INTEROP_CODEC_PORT: '9081',
      INTEROP_CODEC_TOKEN: 'codec-token-0123456789',
    };
    expect(cacheDir(env)).toBe('/cache');
    expect(binaryOverrides(env)).toEqual({ temporal: '/bin/temporal' });
    expect(existingServers(env)).toEqual({
      temporalAddress: '127.0.0.1:7000',
      temporalNamespace: 'ns',
      masterKubeconfig: '/k/master',
      sisterKubeconfigs: ['/k/a', '/k/b'],
    });
    expect(devStackSettings(env)).toEqual({
      workDir: path.join('/cache', 'dev-stack'),
      temporalPort: 7000,
      temporalUiPort: 8233,
      codecPort: 9081,
      codecToken: 'codec-token-0123456789',
      brokerUsername: 'broker',
      brokerPassword: 'secret',
      adminUsername: 'ops',
      adminPassword: 'admin-secret',
    });
  });

  test.each([
    ['INTEROP_TEMPORAL_PORT', 'seven'],
    ['INTEROP_TEMPORAL_PORT', '0'],
    ['INTEROP_TEMPORAL_UI_PORT', '65536'],
    ['INTEROP_TEMPORAL_UI_PORT', '80.5'],
    ['INTEROP_CODEC_PORT', 'x'],
  ])('GIVEN %s=%s WHEN read THEN an error names the variable and the value', (name, value) => {
    const read = () => devStackSettings({ [name]: value });
    expect(read).toThrow(DevSettingsError);
    expect(read).toThrow(new RegExp(`${name}.*"${value}"`));
  });

  test('GIVEN INTEROP_TEMPORAL WHEN read THEN the dev server by default, the production server for `server`, else a clear error', () => {
    expect(temporalKind({})).toBe('dev');
    expect(temporalKind({ INTEROP_TEMPORAL: '' })).toBe('dev');
    expect(temporalKind({ INTEROP_TEMPORAL: 'server' })).toBe('server');
    expect(() => temporalKind({ INTEROP_TEMPORAL: 'production' })).toThrow(DevSettingsError);
    expect(() => temporalKind({ INTEROP_TEMPORAL: 'production' })).toThrow(
      'INTEROP_TEMPORAL must be dev or server, not "production"',
    );
    expect(binaryOverrides({ TEMPORAL_SERVER_DIR: '/opt/temporal' }).temporalServerDir).toBe('/opt/temporal');
    expect([postgresBinDir({}), postgresBinDir({ INTEROP_POSTGRES_BIN_DIR: '/pg/bin' })]).toEqual([
      undefined,
      '/pg/bin',
    ]);
  });

  test('GIVEN KUBE_NODE_DIR WHEN read THEN the node programs come from that folder; unset or empty, from the cache', () => {
    expect(binaryOverrides({ KUBE_NODE_DIR: '/opt/node' }).kubeNodeDir).toBe('/opt/node');
    expect(binaryOverrides({ KUBE_NODE_DIR: '' }).kubeNodeDir).toBeUndefined();
  });
});
