/**
 * A small pool of worker threads, each with its own instance of the gotemplate WebAssembly
 * module, so a runaway template never blocks the event loop: a render past its time limit
 * terminates its thread (the only way to stop Go code) and a fresh one takes its place.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { repoRoot } from '../../local/paths.js';
import { TemplateError } from '../errors.js';

export interface PoolLimits {
  /** Worker threads. @default 2 */
  readonly size: number;
  /** Time limit of one render. @default 2000 */
  readonly timeoutMs: number;
  /** Most bytes a render may write. @default 4 MiB */
  readonly maxOutputBytes: number;
  /** Most bytes of template plus data. @default 4 MiB */
  readonly maxInputBytes: number;
}

export const DEFAULT_LIMITS: PoolLimits = {
  size: 2,
  timeoutMs: 2000,
  maxOutputBytes: 4 * 1024 * 1024,
  maxInputBytes: 4 * 1024 * 1024,
};

interface Job {
  readonly id: number;
  readonly name: string;
  readonly template: string;
  readonly data: string;
  readonly resolve: (output: string) => void;
  readonly reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  job?: Job;
  timer?: NodeJS.Timeout;
}

function wasmFiles(): { wasmFile: string; wasmExecFile: string } {
  const wasmFile =
    process.env.INTEROP_GOTEMPLATE_WASM ?? path.join(repoRoot(), 'dist', 'wasm', 'gotemplate.wasm');
  const wasmExecFile = path.join(path.dirname(wasmFile), 'wasm_exec.js');
  if (!existsSync(wasmFile) || !existsSync(wasmExecFile)) {
    throw new TemplateError(
      `the gotemplate renderer is not built (${wasmFile}): run \`npm run build\``,
      'unsupported',
    );
  }
  return { wasmFile, wasmExecFile };
}

export class RenderPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(readonly limits: PoolLimits = DEFAULT_LIMITS) {}

  /** Renders `template` (named `name`, as Go's errors show it) over `data` (a JSON object text). */
  render(name: string, template: string, data: string): Promise<string> {
    if (this.closed) return Promise.reject(new TemplateError('the renderer is closed', 'unsupported'));
    const size = Buffer.byteLength(template) + Buffer.byteLength(data);
    if (size > this.limits.maxInputBytes) {
      return Promise.reject(
        new TemplateError(
          `template: ${name}: template and data are ${size} bytes, over the limit of ${this.limits.maxInputBytes}`,
          'input-too-large',
        ),
      );
    }
    return new Promise<string>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, name, template, data, resolve, reject });
      this.dispatch();
    });
  }

  /** Stops every thread; pending renders fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0))
      job.reject(new TemplateError('the renderer is closed', 'unsupported'));
    await Promise.all(this.slots.splice(0).map((slot) => this.retire(slot)));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.job);
      if (!slot && this.slots.length < this.limits.size) slot = this.spawn();
      if (!slot) return;
      this.run(slot, this.queue.shift()!);
    }
  }

  private spawn(): Slot {
    const worker = new Worker(path.join(repoRoot(), 'src', 'templates', 'gotemplate', 'worker.mjs'), {
      workerData: wasmFiles(),
    });
    worker.unref();
    const slot: Slot = { worker, ready: Promise.resolve() };
    slot.ready = new Promise<void>((resolve, reject) => {
      const onMessage = (msg: { ready?: boolean }) => {
        if (msg.ready) {
          worker.off('message', onMessage);
          resolve();
        }
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
    worker.on('message', (msg: { id?: number; output?: string; error?: string }) => {
      if (msg.id === undefined || slot.job?.id !== msg.id) return;
      const job = slot.job;
      this.release(slot);
      if (msg.error !== undefined) {
        job.reject(
          new TemplateError(
            msg.error,
            /output exceeds \d+ bytes$/.test(msg.error) ? 'output-too-large' : 'template',
          ),
        );
      } else job.resolve(msg.output ?? '');
      this.dispatch();
    });
    worker.on('error', (err) => {
      const job = slot.job;
      this.replace(slot);
      job?.reject(new TemplateError(`template: the render thread failed: ${err.message}`, 'template'));
    });
    this.slots.push(slot);
    return slot;
  }

  private run(slot: Slot, job: Job): void {
    slot.job = job;
    slot.worker.ref();
    slot.ready.then(
      () => {
        if (slot.job !== job) return;
        slot.timer = setTimeout(() => {
          this.replace(slot);
          job.reject(
            new TemplateError(
              `template: ${job.name}: render exceeded the time limit of ${this.limits.timeoutMs} ms`,
              'timeout',
            ),
          );
        }, this.limits.timeoutMs);
        slot.worker.postMessage({
          id: job.id,
          name: job.name,
          template: job.template,
          data: job.data,
          maxOutput: this.limits.maxOutputBytes,
        });
      },
      (err: Error) => {
        this.replace(slot);
        job.reject(
          err instanceof TemplateError
            ? err
            : new TemplateError(`the render thread did not start: ${err.message}`, 'unsupported'),
        );
      },
    );
  }

  private release(slot: Slot): void {
    clearTimeout(slot.timer);
    slot.job = undefined;
    slot.worker.unref();
  }

  /** Kills a thread (stuck or broken) and lets the queue go on with a fresh one. */
  private replace(slot: Slot): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    void this.retire(slot);
    setImmediate(() => this.dispatch());
  }

  private async retire(slot: Slot): Promise<void> {
    clearTimeout(slot.timer);
    slot.job = undefined;
    await slot.worker.terminate();
  }
}
