/**
 * The Dockerfile, docker-compose.yml and the dev script in package.json: what they build and run,
 * checked as text (no container engine needed). The compose file is also validated with a compose
 * client's `config -q` (`docker compose`, `docker-compose`, or
 * ~/.cache/interoperator/bin/compose-<version>/docker-compose), which tools/ensure-compose.sh
 * installs; without one that check is skipped, and fails under CI=true.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { BROKER_NODE_FLAGS } from '../../../src/config.js';
import { SEARCH_ATTRIBUTE_NAMES } from '../../../src/workflows/search-attributes.js';
import { composeCommand } from '../../support/compose.js';
import { testWithTool } from '../../support/tools.js';

const root = process.cwd();

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
}
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
};
const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');

function envNamesReadBySource(): Set<string> {
  const text = ['src/config.ts', 'src/main.ts']
    .map((f) => readFileSync(path.join(root, f), 'utf8'))
    .join('\n');
  return new Set(text.match(/INTEROP_[A-Z_]+/g) ?? []);
}

describe('docker-compose.yml', () => {
  test('runs the whole local stack', () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      [
        'broker',
        'etcd',
        'kube-apiserver',
        'kube-controller-manager',
        'kube-init',
        'operator',
        'setup',
        'temporal',
        'worker',
      ].sort(),
    );
  });

  test('the Temporal dev server has every search attribute the workflows set', () => {
    const temporal = compose.services.temporal!;
    expect(temporal.image).toMatch(/^\$\{TEMPORAL_IMAGE:-temporalio\/temporal:[\w.]+\}$/);
    const command = temporal.command!;
    expect(command.slice(0, 4)).toEqual(['server', 'start-dev', '--ip', '0.0.0.0']);
    const attributes = command.flatMap((arg, i) => (arg === '--search-attribute' ? [command[i + 1]] : []));
    expect(attributes.sort()).toEqual(SEARCH_ATTRIBUTE_NAMES.map((n) => `${n}=Keyword`).sort());
  });

  test.each(['broker', 'worker'])(
    'the %s is built from the Dockerfile and runs node dist/src/main.js',
    (role) => {
      const service = compose.services[role]!;
      expect(service.build).toBe('.');
      const flags = role === 'broker' ? BROKER_NODE_FLAGS.map((f) => `${f} `).join('') : '';
      expect(service.command!.join(' ')).toContain(`exec node ${flags}dist/src/main.js ${role}`);
      expect(service.environment).toMatchObject({
        INTEROP_TEMPORAL_ADDRESS: 'temporal:7233',
        INTEROP_TEMPORAL_NAMESPACE: 'default',
        INTEROP_TASK_QUEUE: 'interoperator',
        INTEROP_NAMESPACE: 'interoperator',
        INTEROP_INSTANCE_NAMESPACE: '',
      });
      expect(service.depends_on).toMatchObject({ setup: { condition: 'service_completed_successfully' } });
    },
  );

  test('the broker listens on 0.0.0.0:8080 with Basic-auth credentials', () => {
    expect(compose.services.broker!.environment).toMatchObject({
      INTEROP_HOST: '0.0.0.0',
      INTEROP_PORT: '8080',
      INTEROP_BROKER_USERNAME: expect.any(String),
      INTEROP_BROKER_PASSWORD: expect.any(String),
    });
  });

  test('uses only settings the processes read', () => {
    const text = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
    const read = envNamesReadBySource();
    expect([...new Set(text.match(/INTEROP_[A-Z_]+/g))].filter((n) => !read.has(n))).toEqual([]);
  });
});

const composeCli = composeCommand();
testWithTool({
  found: composeCli,
  name: 'compose client',
  install: '`bash tools/ensure-compose.sh` installs Debian’s docker-compose',
})('`compose config -q` accepts docker-compose.yml', () => {
  const [cmd, ...args] = composeCli!;
  const result = spawnSync(cmd!, [...args, '-f', path.join(root, 'docker-compose.yml'), 'config', '-q'], {
    encoding: 'utf8',
  });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
});

describe('Dockerfile', () => {
  // The build arguments declared before the first FROM, with their defaults: what FROM may name.
  const globalArgs = new Map(
    [...dockerfile.split(/^FROM /m)[0]!.matchAll(/^ARG\s+(\w+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]),
  );
  const froms = [...dockerfile.matchAll(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/gim)].map((m) => ({
    image: m[1]!.replace(/^\$\{(\w+)\}$/, (_, name: string) => globalArgs.get(name) ?? `unset ${name}`),
    stage: m[2],
  }));

  test('builds the wasm with Go, the code with node 20, and runs on node 20 slim, by default', () => {
    expect(froms.map((f) => f.image)).toEqual(['golang:1.26', 'node:20', 'node:20-slim']);
    expect([...globalArgs.keys()]).toEqual(['GO_IMAGE', 'NODE_IMAGE', 'NODE_SLIM_IMAGE']);
    expect(dockerfile).toContain('RUN bash tools/build-wasm.sh');
    expect(dockerfile).toMatch(/RUN npm ci --no-audit --no-fund[ \n]/);
    expect(dockerfile).toMatch(/RUN .*npm run build/);
    expect(dockerfile).toMatch(/RUN npm ci --omit=dev/);
  });

  test('needs no BuildKit frontend image (no syntax line)', () => {
    expect(dockerfile).not.toMatch(/^#\s*syntax=/im);
  });

  test('names base images without a registry', () => {
    // A registry is a first path component with a dot or a port, or localhost.
    const registries = froms
      .map(({ image }) => image.split('/'))
      .filter((parts) => parts.length > 1 && /[.:]|^localhost$/.test(parts[0]!));
    expect(registries).toEqual([]);
  });

  test('runs as a non-root user, by number', () => {
    const users = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]!);
    expect(users.at(-1)).toMatch(/^[1-9]\d*(:\d+)?$/);
  });

  test('ships what the runtime loads from disk', () => {
    for (const needed of [
      'dist/src',
      'dist/wasm/gotemplate.wasm',
      'dist/wasm/helm.wasm',
      'dist/wasm/wasm_exec.js',
      'dist/src/templates/gotemplate/worker.mjs',
      'dist/bundles',
    ]) {
      expect(dockerfile).toContain(needed.split('/').slice(-1)[0]);
    }
    expect(dockerfile).toMatch(/ENTRYPOINT \["node"\]/);
  });

  test('its default command runs the broker and worker in one process, with the broker’s node flags', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(cmd!)).toEqual([...BROKER_NODE_FLAGS, 'dist/src/main.js', 'all']);
  });
});

describe('package.json', () => {
  test('make run starts the dev stack, which serves the broker, with the broker’s node flags', () => {
    const scripts = (
      JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    expect(scripts.dev).toContain(`node ${BROKER_NODE_FLAGS.join(' ')} dist/dev/stack.js`);
  });
});
