/**
 * A small pool of worker threads that run every template (worker.mjs): Go's text/template + sprig
 * and go-jsonnet, compiled to WebAssembly, and mustache. A runaway template never blocks the caller's event loop: a
 * render past its time limit terminates its thread (the only way to stop Go code) and a fresh one
 * takes its place; so does a thread whose Go runtime died (out of memory).
 */
import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { TemplateError, type TemplateErrorReason } from '../errors.js';

/**
 * Limits of the renderer, and where its WebAssembly build is; `timeoutMs`, `maxOutputBytes` and
 * `maxInputBytes` can also be set per render.
 */
export interface RendererLimits {
  /** Render threads. @default 2 */
  readonly size: number;
  /** Time limit of one render, in milliseconds. @default 2000 */
  readonly timeoutMs: number;
  /** Most bytes a render may produce. @default 4 MiB */
  readonly maxOutputBytes: number;
  /** Most bytes of template text plus data (as JSON). @default 4 MiB */
  readonly maxInputBytes: number;
  /**
   * Most memory of one thread's Go runtime (its WebAssembly memory, never returned once grown; also
   * the thread's JavaScript heap limit); a thread that grew past half of it is replaced after its
   * render. @default 512 MiB
   */
  readonly maxMemoryBytes: number;
  /**
   * The WebAssembly build of the Go renderer, with Go's `wasm_exec.js` in the same folder.
   * @default {@link builtWasmFile}
   */
  readonly wasmFile: string;
}

/**
 * Where `npm run build` puts a WebAssembly build (`gotemplate.wasm`, or `helm.wasm`): `wasm/` of
 * the compiled tree (`dist/`) this module is part of, found from this module's own location; when
 * the module runs from source (under jest), the repository's `dist/wasm/`.
 */
export function builtWasmFile(name = 'gotemplate.wasm'): string {
  const fromSource = import.meta.url.endsWith('.ts');
  const relative = fromSource ? `../../../dist/wasm/${name}` : `../../../wasm/${name}`;
  return fileURLToPath(new URL(relative, import.meta.url));
}

/** The limits used unless configured otherwise. */
export const DEFAULT_LIMITS: RendererLimits = {
  size: 2,
  timeoutMs: 2000,
  maxOutputBytes: 4 * 1024 * 1024,
  maxInputBytes: 4 * 1024 * 1024,
  maxMemoryBytes: 512 * 1024 * 1024,
  wasmFile: builtWasmFile(),
};

/** Per-render limits. */
export type RenderLimits = Partial<Pick<RendererLimits, 'timeoutMs' | 'maxOutputBytes' | 'maxInputBytes'>>;

/**
 * What the threads run: the template languages, and `documents`, which reads rendered YAML
 * documents (a JSON array of texts in place of the template, no data) as the original did; `helm`
 * runs in a pool of the helm build only (the chart archive in base64 in place of the template).
 */
export type PoolEngine = 'gotemplate' | 'jsonnet' | 'mustache' | 'documents' | 'helm';

/**
 * What a render's output is read as in the thread: any number of YAML documents (for jsonnet: the
 * items of a list, or one object), or one value.
 */
export type ReadAs = 'documents' | 'value';

// The thread's code is plain JavaScript beside this module: in the source tree, and copied beside
// the compiled module by `npm run build`.
const WORKER_FILE = fileURLToPath(new URL('./worker.mjs', import.meta.url));
const WASM_PAGE = 64 * 1024;

interface Job {
  readonly id: number;
  readonly engine: PoolEngine;
  readonly name: string;
  readonly template: string;
  readonly data: unknown;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly maxInputBytes: number;
  readonly read: ReadAs | undefined;
  readonly resolve: (output: string) => void;
  readonly reject: (err: Error) => void;
}

interface Reply {
  readonly id?: number;
  readonly ready?: boolean;
  readonly output?: string;
  readonly error?: string;
  readonly reason?: TemplateErrorReason;
  readonly memoryBytes?: number;
  readonly exited?: boolean;
}

interface Thread {
  readonly worker: Worker;
  ready: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

function readUleb(bytes: Uint8Array, at: number): [value: number, next: number] {
  let value = 0;
  let shift = 0;
  let byte: number;
  do {
    byte = bytes[at++]!;
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}

function uleb(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return out;
}

/**
 * Gives the module's memory a maximum, so a template that allocates without bound (`until
 * 1000000000`) stops the Go runtime of its thread with "out of memory" instead of growing the
 * process to 4 GiB. Go's linker declares its memory with a minimum only.
 */
export function capMemory(wasm: Uint8Array, maxBytes: number): Uint8Array {
  let at = 8; // magic and version
  while (at < wasm.length) {
    const id = wasm[at]!;
    const [size, body] = readUleb(wasm, at + 1);
    if (id === 5) {
      const [count, first] = readUleb(wasm, body);
      if (count !== 1) return wasm;
      let p = first;
      const flags = wasm[p++]!;
      const [min] = readUleb(wasm, p);
      if (flags !== 0) return wasm;
      const max = Math.max(min, Math.ceil(maxBytes / WASM_PAGE));
      const content = [...uleb(1), 0x01, ...uleb(min), ...uleb(max)];
      const section = Uint8Array.from([5, ...uleb(content.length), ...content]);
      const out = new Uint8Array(at + section.length + wasm.length - (body + size));
      out.set(wasm.subarray(0, at), 0);
      out.set(section, at);
      out.set(wasm.subarray(body + size), at + section.length);
      return out;
    }
    at = body + size;
  }
  return wasm;
}

/** The part of the WebAssembly global used here (the project's TypeScript libs do not declare it). */
interface WasmApi {
  compile(bytes: Uint8Array): Promise<CompiledModule>;
}
/** A compiled WebAssembly.Module, opaque here: the threads instantiate it. */
type CompiledModule = object;
const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** Compiled modules by file, modification time and memory cap: compiled once, shared by every thread. */
const modules = new Map<string, Promise<CompiledModule>>();

function compiledModule(file: string, maxMemoryBytes: number): Promise<CompiledModule> {
  const key = `${file}:${statSync(file).mtimeMs}:${maxMemoryBytes}`;
  let module = modules.get(key);
  if (!module) {
    module = readFile(file).then((bytes) => wasmApi.compile(capMemory(bytes, maxMemoryBytes)));
    module.catch(() => modules.delete(key));
    modules.set(key, module);
  }
  return module;
}

/** The render threads, their queue and their limits. */
export class RenderPool {
  private readonly threads: Thread[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(readonly limits: RendererLimits = DEFAULT_LIMITS) {}

  /**
   * Renders `template`, named `name` (as errors show it), over `data` (JSON data: it travels as
   * JSON text, written when the render starts, so it must not change until the render settles).
   * Fails with a {@link TemplateError}: the template's own error in its engine's words, or a limit.
   * With `read`, the thread also reads the output's YAML documents (as the `documents` engine does;
   * `value`: at most one) and the result is their values as a JSON array, in one trip instead of two.
   */
  render(
    engine: PoolEngine,
    name: string,
    template: string,
    data: unknown,
    limits: RenderLimits = {},
    read?: ReadAs,
  ): Promise<string> {
    if (this.closed) return Promise.reject(new TemplateError('the renderer is closed', 'unavailable'));
    // Checked while no thread runs: a running thread proves the build is there.
    if (!this.threads.some((t) => t.ready)) {
      const file = this.limits.wasmFile;
      if (!existsSync(file) || !existsSync(path.join(path.dirname(file), 'wasm_exec.js'))) {
        return Promise.reject(
          new TemplateError(
            `the ${engine === 'helm' ? 'helm' : 'gotemplate'} renderer is not built (${file} or its wasm_exec.js is missing): run \`npm run build\``,
            'unavailable',
          ),
        );
      }
    }
    return new Promise<string>((resolve, reject) => {
      this.queue.push({
        id: this.nextId++,
        engine,
        name,
        template,
        data,
        timeoutMs: limits.timeoutMs ?? this.limits.timeoutMs,
        maxOutputBytes: limits.maxOutputBytes ?? this.limits.maxOutputBytes,
        maxInputBytes: limits.maxInputBytes ?? this.limits.maxInputBytes,
        read: engine === 'documents' ? undefined : read,
        resolve,
        reject,
      });
      this.dispatch();
    });
  }

  /** Stops every thread; queued and running renders fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0))
      job.reject(new TemplateError('the renderer is closed', 'unavailable'));
    await Promise.all(
      this.threads.splice(0).map((thread) => {
        thread.job?.reject(new TemplateError('the renderer is closed', 'unavailable'));
        return this.stop(thread);
      }),
    );
  }

  /** Gives queued renders to idle threads, and starts threads (up to `size`) for the rest. */
  private dispatch(): void {
    if (this.closed) return;
    let starting = 0;
    for (const thread of this.threads) {
      while (thread.ready && !thread.job && this.queue.length > 0) this.start(thread, this.queue.shift()!);
      if (!thread.ready) starting += 1;
    }
    let wanted = Math.min(this.queue.length - starting, this.limits.size - this.threads.length);
    while (wanted-- > 0 && this.spawn());
  }

  private spawn(): Thread | undefined {
    let module: Promise<CompiledModule>;
    try {
      module = compiledModule(this.limits.wasmFile, this.limits.maxMemoryBytes);
    } catch (err) {
      this.failQueue(err);
      return undefined;
    }
    const worker = new Worker(WORKER_FILE, {
      workerData: {
        wasmExecFile: path.join(path.dirname(this.limits.wasmFile), 'wasm_exec.js'),
        goMemLimit: `${Math.floor((this.limits.maxMemoryBytes * 3) / 4 / 2 ** 20)}MiB`,
      },
      resourceLimits: { maxOldGenerationSizeMb: Math.ceil(this.limits.maxMemoryBytes / 2 ** 20) },
    });
    const thread: Thread = { worker, ready: false };
    worker.on('message', (reply: Reply) => this.onReply(thread, reply));
    worker.on('error', (err: Error & { code?: string }) =>
      this.onFailure(
        thread,
        err.message,
        err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'out-of-memory' : 'template',
      ),
    );
    worker.on('exit', (code) => this.onFailure(thread, `it exited with code ${code}`));
    // The thread counts in the pool at once; it starts once the module is compiled (once per pool).
    module.then(
      (compiled) => worker.postMessage({ module: compiled }),
      (err: Error) => this.onFailure(thread, `the WebAssembly module does not compile: ${err.message}`),
    );
    this.threads.push(thread);
    return thread;
  }

  /**
   * Writes the job's data as JSON text and hands the job to the thread. Done here, one job per free
   * thread, rather than when renders are asked for: a burst of renders then never holds the event
   * loop for the time of serialising all their data at once.
   */
  private start(thread: Thread, job: Job): void {
    let data: string;
    try {
      // JSON text end to end: keys such as __proto__ stay data and never touch a JavaScript prototype.
      data = JSON.stringify(job.data) ?? 'null';
    } catch (err) {
      job.reject(
        new TemplateError(
          `template: ${job.name}: the data is not JSON: ${(err as Error).message}`,
          'template',
        ),
      );
      return;
    }
    // UTF-8 takes at most 3 bytes per UTF-16 unit: most renders need no exact count.
    const upperBound = 3 * (job.template.length + data.length);
    const size =
      upperBound <= job.maxInputBytes ? 0 : Buffer.byteLength(job.template) + Buffer.byteLength(data);
    if (size > job.maxInputBytes) {
      job.reject(
        new TemplateError(
          `template: ${job.name}: template and data are ${size} bytes, over the limit of ${job.maxInputBytes}`,
          'input-too-large',
        ),
      );
      return;
    }
    thread.job = job;
    thread.worker.ref();
    thread.timer = setTimeout(() => {
      this.retire(thread);
      job.reject(
        new TemplateError(
          `template: ${job.name}: the render exceeded its time limit of ${job.timeoutMs} ms`,
          'timeout',
        ),
      );
    }, job.timeoutMs);
    thread.worker.postMessage({
      id: job.id,
      engine: job.engine,
      name: job.name,
      template: job.template,
      data,
      maxOutput: job.maxOutputBytes,
      read: job.read,
    });
  }

  private onReply(thread: Thread, reply: Reply): void {
    if (reply.ready) {
      thread.ready = true;
      thread.worker.unref();
      this.dispatch();
      return;
    }
    const job = thread.job;
    if (!job || reply.id !== job.id) return;
    clearTimeout(thread.timer);
    thread.job = undefined;
    if (reply.error !== undefined) job.reject(new TemplateError(reply.error, reply.reason ?? 'template'));
    else job.resolve(reply.output ?? '');
    if (reply.exited || (reply.memoryBytes ?? 0) > this.limits.maxMemoryBytes / 2) this.retire(thread);
    else thread.worker.unref();
    this.dispatch();
  }

  /** A thread that failed or stopped: its render fails, and the queue goes on with a fresh one. */
  private onFailure(thread: Thread, message: string, reason: TemplateErrorReason = 'template'): void {
    if (!this.threads.includes(thread)) return;
    const job = thread.job;
    this.retire(thread);
    job?.reject(
      thread.ready
        ? new TemplateError(`template: ${job.name}: the render thread failed: ${message}`, reason)
        : new TemplateError(`the render thread did not start: ${message}`, 'unavailable'),
    );
    // Threads that cannot start fail the waiting renders rather than being retried forever.
    if (!thread.ready && !this.threads.some((t) => t.ready)) this.failQueue(new Error(message));
    this.dispatch();
  }

  private failQueue(err: unknown): void {
    for (const job of this.queue.splice(0)) {
      job.reject(
        err instanceof TemplateError
          ? err
          : new TemplateError(`the render thread did not start: ${(err as Error).message}`, 'unavailable'),
      );
    }
  }

  /** Takes a thread out of the pool and terminates it. */
  private retire(thread: Thread): void {
    const index = this.threads.indexOf(thread);
    if (index >= 0) this.threads.splice(index, 1);
    void this.stop(thread);
    setImmediate(() => this.dispatch());
  }

  private async stop(thread: Thread): Promise<void> {
    clearTimeout(thread.timer);
    thread.job = undefined;
    await thread.worker.terminate();
  }
}
