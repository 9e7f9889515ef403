/**
 * Render benchmark: the design document's PostgreSQL status template, rendered many times through
 * our API (Go's text/template compiled to WebAssembly, in worker threads) and by the same Go code
 * built natively (bench/render-native.ts, timed in process), in one run; plus the worst event-loop
 * delay while a burst of renders runs at once.
 *
 *   npm run build && node dist/bench/render.js [renders]
 *
 * Targets: at most 2 ms per render through our API; the event loop never blocked over 10 ms.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { repoRoot } from '../dev/local/paths.js';
import type { SFPlan } from '../src/resources/types.js';
import {
  closeRenderer,
  configureRenderer,
  DEFAULT_LIMITS,
  findTemplate,
  renderTemplate,
} from '../src/templates/index.js';
import { benchNatively } from './render-native.js';

const renders = Number(process.argv[2] ?? 2000);
const plan = parse(
  readFileSync(path.join(repoRoot(), 'examples', 'postgresql', 'sfplan.yaml'), 'utf8'),
) as SFPlan;
const template = findTemplate(plan, 'status')!;

/** A bound instance whose database runs: the status template's longest path. */
const data = {
  instance: {
    apiVersion: 'osb.servicefabrik.io/v1alpha1',
    kind: 'SFServiceInstance',
    metadata: { name: 'abc', namespace: 'sf-abc' },
    spec: { planId: plan.spec.id, serviceId: plan.spec.serviceId, parameters: { foo: 'bar' } },
  },
  binding: { metadata: { name: 'b1', namespace: 'sf-abc' } },
  plan,
  postgresql: {
    apiVersion: 'acid.zalan.do/v1',
    kind: 'postgresql',
    metadata: { name: 'sapcp-abc', namespace: 'sf-abc', generation: 1 },
    spec: { teamId: 'sapcp', users: { main: ['superuser', 'createdb'] } },
    status: { PostgresClusterStatus: 'Running' },
  },
  secret: {
    apiVersion: 'v1',
    kind: 'Secret',
    data: {
      username: Buffer.from('b1').toString('base64'),
      password: Buffer.from('s3cr3t').toString('base64'),
    },
  },
  svc: { apiVersion: 'v1', kind: 'Service', spec: { clusterIP: '10.0.0.1', ports: [{ port: 5432 }] } },
};

const render = () => renderTemplate(template, 'status', data);

interface Burst {
  readonly threads: number;
  readonly msPerRender: number;
  readonly worstDelayMs: number;
  readonly p99DelayMs: number;
}

/** All renders asked for at once, with `threads` render threads; the event loop watched throughout. */
async function burst(threads: number): Promise<Burst> {
  await configureRenderer({ size: threads });
  for (let i = 0; i < 200; i += 1) await render();
  // The delay monitor samples on a timer: let it tick before the burst, so that a block at the
  // very start of the burst (all renders asked for at once) is measured too.
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  await sleep(50);
  const started = performance.now();
  await Promise.all(Array.from({ length: renders }, render));
  const msPerRender = (performance.now() - started) / renders;
  await sleep(50);
  delay.disable();
  return { threads, msPerRender, worstDelayMs: delay.max / 1e6, p99DelayMs: delay.percentile(99) / 1e6 };
}

async function main(): Promise<void> {
  // Warm up: threads started, WebAssembly compiled and tiered up.
  for (let i = 0; i < 200; i += 1) await render();

  const sequentialStart = performance.now();
  for (let i = 0; i < renders; i += 1) await render();
  const sequentialMs = (performance.now() - sequentialStart) / renders;

  const bursts = [await burst(DEFAULT_LIMITS.size), await burst(1)];
  await configureRenderer(DEFAULT_LIMITS);

  const nativeMs = await benchNatively(
    {
      name: 'status',
      template: template.content!,
      data: JSON.stringify(data),
      maxOutput: DEFAULT_LIMITS.maxOutputBytes,
    },
    renders,
  );

  const line = (what: string, value: string) => console.log(`  ${what.padEnd(56)} ${value}`);
  const perRender = (ms: number) => `${ms.toFixed(3)} ms/render  (${(ms / nativeMs).toFixed(2)}x native)`;
  console.log(`PostgreSQL status template, ${renders} renders each, ${os.availableParallelism()} cores`);
  line('native Go, in process', perRender(nativeMs));
  line('our API, one at a time', perRender(sequentialMs));
  for (const b of bursts) {
    line(`our API, ${renders} at once, ${b.threads} thread(s): throughput`, perRender(b.msPerRender));
    line(`  worst event-loop delay (p99)`, `${b.worstDelayMs.toFixed(1)} ms (${b.p99DelayMs.toFixed(1)} ms)`);
  }
  const worst = bursts[0]!.worstDelayMs;
  console.log(
    `  targets with the default ${DEFAULT_LIMITS.size} threads: ≤ 2 ms per render ${sequentialMs <= 2 ? 'met' : 'NOT met'}, ` +
      `event loop ≤ 10 ms ${worst <= 10 ? 'met' : 'NOT met'}`,
  );
  await closeRenderer();
}

await main();
