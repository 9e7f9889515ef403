/**
 * Render benchmark: the PostgreSQL status template of the design document, rendered many times
 * through our API (Go's text/template compiled to WebAssembly, in worker threads) and by the same
 * Go code built natively, in one run; plus the worst event-loop delay during a burst of renders.
 *
 *   npm run build && node dist/bench/render.js [renders]
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parse } from 'yaml';
import type { SFPlan } from '../src/resources/types.js';
import { closeRenderer, findTemplate, renderTemplate } from '../src/templates/index.js';
import { repoRoot } from '../src/local/paths.js';

const renders = Number(process.argv[2] ?? 2000);
const root = repoRoot();
const plan = parse(readFileSync(`${root}/examples/postgresql/sfplan.yaml`, 'utf8')) as SFPlan;
const template = findTemplate(plan, 'status')!;
const data = {
  instance: { metadata: { name: 'abc', namespace: 'sf-abc' } },
  binding: { metadata: { name: 'b1' } },
  plan,
  postgresql: {
    apiVersion: 'acid.zalan.do/v1',
    kind: 'postgresql',
    metadata: { name: 'sapcp-abc' },
    status: { PostgresClusterStatus: 'Running' },
  },
  secret: {
    data: { username: Buffer.from('u').toString('base64'), password: Buffer.from('p').toString('base64') },
  },
  svc: { spec: { clusterIP: '10.0.0.1', ports: [{ port: 5432 }] } },
};

async function main(): Promise<void> {
  // Warm up: threads started, WebAssembly compiled.
  for (let i = 0; i < 50; i += 1) await renderTemplate(template, 'status', data);

  const sequentialStart = performance.now();
  for (let i = 0; i < renders; i += 1) await renderTemplate(template, 'status', data);
  const sequentialMs = (performance.now() - sequentialStart) / renders;

  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const burstStart = performance.now();
  await Promise.all(Array.from({ length: renders }, () => renderTemplate(template, 'status', data)));
  const burstMs = (performance.now() - burstStart) / renders;
  delay.disable();

  const native = execFileSync(`${root}/dist/wasm/render-native`, ['-bench', String(renders)], {
    input: JSON.stringify({
      name: 'status',
      template: template.content,
      data: JSON.stringify(data),
      maxOutput: 0,
    }),
  });
  const nativeMs = Number(native.toString().trim()) / 1e6;

  const rows = [
    ['native Go, in process', nativeMs],
    ['our API, one at a time', sequentialMs],
    [`our API, ${renders} at once (throughput)`, burstMs],
  ] as const;
  console.log(`PostgreSQL status template, ${renders} renders each`);
  for (const [what, ms] of rows)
    console.log(`  ${what.padEnd(40)} ${ms.toFixed(3)} ms/render  (${(ms / nativeMs).toFixed(1)}x native)`);
  console.log(
    `  worst event-loop delay during the burst   ${(delay.max / 1e6).toFixed(1)} ms (p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms)`,
  );
  await closeRenderer();
}

await main();
