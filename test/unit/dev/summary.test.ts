/**
 * What `make run` prints when the dev stack is up: every credential it made, and commands that
 * work as printed (the command line's exported settings are the ones it reads).
 */
import { loadAdminClientConfig } from '../../../src/config.js';
import { adminCliLine, devStackSummary, type DevStackFacts } from '../../../dev/summary.js';

const facts: DevStackFacts = {
  temporal: { address: '127.0.0.1:7233', namespace: 'default', uiUrl: 'http://127.0.0.1:8233' },
  codec: { port: 8081, token: 'codec-token' },
  namespace: 'interoperator',
  clusters: [
    { id: '1', kubeconfigPath: '/state/kube/1.kubeconfig' },
    { id: 'sister-1', kubeconfigPath: '/state/kube/sister-1.kubeconfig' },
  ],
  catalog: ['SFService/postgresql', 'SFPlan/small'],
  brokerUrl: 'http://127.0.0.1:8080',
  osb: { username: 'broker', password: 'osb-Secret_1' },
  admin: { username: 'admin', password: 'admin-Secret_2' },
  workDir: '/state',
};

/** The variables a shell line exports, as the shell would read them. */
function exported(line: string): Record<string, string> {
  const match = /^export ((?:\w+=\S+ ?)+); /.exec(line);
  if (!match) throw new Error(`not an export line: ${line}`);
  return Object.fromEntries(
    match[1]!
      .trim()
      .split(' ')
      .map((kv) => kv.split(/=(.*)/s).slice(0, 2)),
  );
}

describe('the dev stack summary', () => {
  const lines = devStackSummary(facts).split('\n');
  const line = (label: string) => lines.find((l) => l.startsWith(`  ${label}`))?.slice(20);

  test('GIVEN the stack WHEN it is up THEN the OSB and the admin API are printed with their credentials', () => {
    expect(line('OSB broker')).toBe('http://127.0.0.1:8080 (Basic auth broker / osb-Secret_1)');
    expect(line('try')).toBe(
      "curl -u broker:osb-Secret_1 -H 'X-Broker-API-Version: 2.17' http://127.0.0.1:8080/v2/catalog",
    );
    expect(line('admin API')).toBe('http://127.0.0.1:8080/admin (Basic auth admin / admin-Secret_2)');
  });

  test('GIVEN the stack WHEN it is up THEN the command line is printed with the settings it reads for the admin API', () => {
    const cli = line('command line')!;
    expect(cli).toBe(
      'export INTEROP_ADMIN_URL=http://127.0.0.1:8080 INTEROP_ADMIN_USERNAME=admin ' +
        'INTEROP_ADMIN_PASSWORD=admin-Secret_2; node dist/src/cli/main.js instances list' +
        '  # then: rollout status <plan-id>, --help',
    );
    expect(loadAdminClientConfig(exported(cli))).toEqual({
      url: 'http://127.0.0.1:8080',
      username: 'admin',
      password: 'admin-Secret_2',
    });
  });

  test('GIVEN the stack WHEN it is up THEN each cluster, the Temporal UI, the codec endpoint and the state folder are printed', () => {
    expect(line('master cluster')).toBe(
      'kubectl --kubeconfig /state/kube/1.kubeconfig get sfplans -n interoperator',
    );
    expect(line('sister sister-1')).toBe('kubectl --kubeconfig /state/kube/sister-1.kubeconfig get ns');
    expect(line('Temporal Web UI')).toContain('http://127.0.0.1:8233');
    expect(line('codec endpoint')).toContain("--codec-auth 'Bearer codec-token'");
    expect(line('catalog')).toBe('SFService/postgresql, SFPlan/small');
    expect(line('state and logs')).toBe('/state');
  });

  test('GIVEN any arguments WHEN the command line is written THEN it runs the built CLI from the repository', () => {
    expect(adminCliLine('http://b:1', { username: 'u', password: 'p' }, 'rollout status plan-1')).toBe(
      'export INTEROP_ADMIN_URL=http://b:1 INTEROP_ADMIN_USERNAME=u INTEROP_ADMIN_PASSWORD=p; node dist/src/cli/main.js rollout status plan-1',
    );
  });
});
