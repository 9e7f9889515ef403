/**
 * The landscape soak at its long size: the soak of `make test` (test/soak/landscape.test.ts, on
 * servers of its own) with its tenants starting new lives for `--minutes` instead of a minute, more
 * tenants and more lives each at once. It prints the soak's verdict line and exits non-zero unless
 * every figure but the operations, the repeats and their ends is 0.
 *
 *   npm run build && node dist/bench/soak.js [--minutes 30] [--tenants 4] [--lives 3]
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    tenants: { type: 'string', default: '4' },
    lives: { type: 'string', default: '3' },
  },
});
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const child = spawn(
  process.execPath,
  [
    '--experimental-vm-modules',
    path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
    '--no-watchman',
    '--ci',
    '--selectProjects',
    'soak',
  ],
  {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      INTEROP_SOAK_SECONDS: String(Math.round(Number(values.minutes) * 60)),
      INTEROP_SOAK_TENANTS: values.tenants,
      INTEROP_SOAK_LIVES: values.lives,
    },
  },
);
// Jest writes the tests' console (the verdict among it) to its standard error.
let output = '';
for (const [from, to] of [
  [child.stdout, process.stdout],
  [child.stderr, process.stderr],
] as const)
  from.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    to.write(chunk);
  });
child.on('exit', (code) => {
  const verdict = output.match(/soak: \d+ operations[^\n;]*/)?.[0];
  console.log(`\n${new Date().toISOString()} ${verdict ?? 'soak: no verdict (see above)'}`);
  process.exit(code ?? 1);
});
