/**
 * The read load of the benchmarks in a process of its own, started once per run with `fork()`:
 * its pauses count in every latency it measures, and the benchmark's own process carries the heap
 * of everything before the reads (workflow results, the Temporal client). A fresh, small process
 * pauses least; it reads the floor and the broker alike.
 *
 * Messages: `{ port, path, headers, clients, warmUp, count }` in; `{ samples }` (ms, one per timed
 * read) or `{ error }` out, then it waits for the next.
 */
import { LoadClient } from './http-load.js';

export interface ReadJob {
  readonly port: number;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly clients: number;
  /** Reads before the timed ones (the JIT, the connections); the parent is told when they are done. */
  readonly warmUp: number;
  readonly count: number;
}

export type ReadReply = { warm: true } | { samples: number[] } | { error: string };

async function run(job: ReadJob): Promise<number[]> {
  const clients = await Promise.all(Array.from({ length: job.clients }, () => LoadClient.connect(job.port)));
  const request = LoadClient.get(job.path, job.headers);
  const reads = async (count: number, samples?: Float64Array) => {
    let next = 0;
    await Promise.all(
      clients.map(async (client) => {
        while (next < count) {
          const i = next++;
          const started = performance.now();
          const res = await client.send(request);
          if (res.status !== 200) throw new Error(`GET ${job.path} answered ${res.status}: ${res.body}`);
          if (samples) samples[i] = performance.now() - started;
        }
      }),
    );
  };
  try {
    await reads(job.warmUp);
    // The parent samples CPU between this message and the samples.
    await new Promise<void>((resolve) => process.send!({ warm: true } satisfies ReadReply, () => resolve()));
    // Filled in place: a growing array would make garbage, and the collector's pauses here would count
    // in the latencies measured.
    const samples = new Float64Array(job.count);
    await reads(job.count, samples);
    return Array.from(samples);
  } finally {
    for (const client of clients) client.close();
  }
}

process.on('message', (job: ReadJob) => {
  run(job).then(
    (samples) => process.send!({ samples } satisfies ReadReply),
    (err: unknown) => process.send!({ error: String(err) } satisfies ReadReply),
  );
});
