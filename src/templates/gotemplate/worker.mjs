// One render thread of the pool (pool.ts). It runs Go's text/template + sprig and go-jsonnet,
// compiled to one WebAssembly module instantiated once per thread, and mustache, so that no template
// ever runs on the caller's event loop; or, in a pool of the helm build (helm.wasm), Helm's chart
// engine. Plain JavaScript because worker threads cannot load TypeScript; the pool loads it from
// beside its own module (`npm run build` copies it beside the compiled pool.js).
//
// workerData: { wasmExecFile: Go's wasm_exec.js, goMemLimit: GOMEMLIMIT for the Go runtime }
// In:  first { module: WebAssembly.Module } (compiled once by the pool, with its memory capped),
//      then { id, engine: 'gotemplate' | 'jsonnet' | 'mustache', name, template, data: JSON text,
//      maxOutput },
//      or { id, engine: 'documents', name, template: JSON array of YAML documents, maxOutput }
//      or { id, engine: 'helm', name, template: the chart archive in base64, data: JSON text of
//      the values, release and capabilities (src/templates/helm/go), maxOutput }
//      `read: 'documents' | 'value'` on a gotemplate or mustache job: the output's YAML documents are
//      read here too (as the 'documents' job would; 'value': at most one), and the output is their
//      values as a JSON array: one trip. On a jsonnet job: the JSON it manifests, as that array.
// Out: { ready: true } once, then per job { id, output } or { id, error, reason },
//      with memoryBytes (the WebAssembly memory) and exited (the Go runtime is gone: retire me).
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import Mustache from 'mustache';

const { wasmExecFile, goMemLimit } = workerData;

// Below the event loop's priority: on Linux a thread's nice value is its own, so where render
// threads and the event loop compete for the cores, the event loop (HTTP, Temporal heartbeats) wins.
try {
  os.setPriority(os.constants.priority.PRIORITY_BELOW_NORMAL);
} catch {
  // Not permitted here: renders simply run at the normal priority.
}

// What the Go runtime writes to stdout/stderr (a fatal error and its goroutine dump) must never reach
// the process's own output (the render command prints templates on stdout): keep its start for the
// error message instead. wasm_exec.js uses globalThis.fs when it exists.
let goOutput = '';
const enosys = () => Object.assign(new Error('not implemented'), { code: 'ENOSYS' });
const goFs = {
  constants: {
    O_WRONLY: -1,
    O_RDWR: -1,
    O_CREAT: -1,
    O_TRUNC: -1,
    O_APPEND: -1,
    O_EXCL: -1,
    O_DIRECTORY: -1,
  },
  writeSync(_fd, buf) {
    if (goOutput.length < 4096) goOutput += Buffer.from(buf).toString('utf8');
    return buf.length;
  },
  write(fd, buf, offset, length, position, callback) {
    if (offset !== 0 || length !== buf.length || position !== null) callback(enosys());
    else callback(null, goFs.writeSync(fd, buf));
  },
};
globalThis.fs = new Proxy(goFs, {
  get: (target, prop) =>
    prop in target
      ? target[prop]
      : (...args) => {
          const callback = args.at(-1);
          if (typeof callback === 'function') callback(enosys());
        },
});

await import(pathToFileURL(wasmExecFile).href);
const { module } = await new Promise((resolve) => parentPort.once('message', resolve));
const go = new globalThis.Go();
go.env = { GOMEMLIMIT: goMemLimit };
go.exit = () => {}; // wasm_exec.js would print "exit code: 2"; renderGo reports why Go stopped.
const instance = await WebAssembly.instantiate(module, go.importObject);
void go.run(instance);
if (typeof globalThis.interopRender !== 'function' && typeof globalThis.interopHelm !== 'function') {
  throw new Error('the WebAssembly module registered neither interopRender nor interopHelm');
}

/** Why the Go runtime stopped during a job, from what it wrote. */
function goStopped(job) {
  const fatal = /^fatal error: .*$/m.exec(goOutput)?.[0] ?? goOutput.split('\n')[0];
  return /out of memory/.test(goOutput)
    ? { error: `template: ${job.name}: the render ran out of memory`, reason: 'out-of-memory' }
    : {
        error: `template: ${job.name}: the Go runtime stopped: ${fatal || 'no reason given'}`,
        reason: 'template',
      };
}

function renderGo(job) {
  const render =
    job.engine === 'helm'
      ? globalThis.interopHelm
      : job.engine === 'jsonnet'
        ? globalThis.interopJsonnet
        : globalThis.interopRender;
  if (typeof render !== 'function') {
    return {
      error: `template: ${job.name}: this thread does not render ${job.engine}`,
      reason: 'unavailable',
    };
  }
  const result = render(job.name, job.template, job.data, job.maxOutput);
  if (go.exited || !result) return goStopped(job);
  return result.error === undefined
    ? { output: result.output }
    : { error: result.error, reason: result.reason };
}

/**
 * Reads rendered YAML documents as the original did (Go's yaml.v2, render.Documents): `template`
 * holds the documents as a JSON array; the output is their values as a JSON array.
 */
function readDocuments(job) {
  const result = globalThis.interopDocuments(job.template);
  if (go.exited || !result) return goStopped(job);
  if (result.error !== undefined) {
    const where = typeof result.index === 'number' ? `document ${result.index + 1}: ` : '';
    return { error: `${where}${result.error}`, reason: 'template' };
  }
  if (job.maxOutput > 0 && result.json.length > job.maxOutput) {
    return { error: `the documents exceed the limit of ${job.maxOutput} bytes`, reason: 'output-too-large' };
  }
  return { output: result.json };
}

/**
 * Splits multi-document YAML as Kubernetes' YAML reader does; the same rule as splitDocuments in
 * documents.ts (this file cannot load TypeScript), which the template tests hold both to.
 */
function splitDocuments(text) {
  return text
    .split(/^---[ \t]*(?:#.*)?\r?$/m)
    .filter((doc) => doc.replace(/^[ \t]*#.*$/gm, '').trim() !== '');
}

/** A rendered text's documents, read: what renderObjects and renderValues need, without a second trip. */
function readRendered(job, rendered) {
  if (rendered.error !== undefined) return rendered;
  const docs = splitDocuments(rendered.output);
  if (docs.length === 0) return { output: '[]' };
  if (job.read === 'value' && docs.length > 1) {
    return {
      error: `the ${job.name} template rendered invalid YAML: expected one document, found ${docs.length}`,
      reason: 'template',
    };
  }
  const read = readDocuments({ ...job, template: JSON.stringify(docs) });
  if (read.error !== undefined && read.reason === 'template') {
    return { error: `the ${job.name} template rendered invalid YAML: ${read.error}`, reason: 'template' };
  }
  return read;
}

/**
 * What a jsonnet program evaluated to (JSON text), as the values of rendered documents: `null` is
 * none; for `documents`, a list gives its items and anything else is one value; for `value`, the
 * value itself. The values are JSON already: no YAML to read.
 */
function readJsonnet(job, evaluated) {
  if (evaluated.error !== undefined) return evaluated;
  const json = evaluated.output.trim();
  if (json === 'null') return { output: '[]' };
  if (job.read === 'documents' && json.startsWith('[')) return { output: json };
  return { output: `[${json}]` };
}

// ---------------------------------------------------------------------------------------------
// mustache

/** How values print in mustache: like JavaScript's String(), for the data-only view below too. */
function text(value) {
  if (value === NULL_VIEW) return '';
  if (Array.isArray(value))
    return Array.prototype.map.call(value, (v) => (v == null ? '' : text(v))).join(',');
  if (value !== null && typeof value === 'object') return '[object Object]';
  return String(value);
}

const toPrimitive = {
  value() {
    return text(this);
  },
};

/**
 * The data as mustache sees it: objects and arrays without a prototype, so a template reaches only
 * the data (never `constructor`, `toString` or `__proto__` of Object.prototype), and `__proto__` keys
 * stay plain data. JSON.parse already made them own properties.
 */
function view(value) {
  if (value === null || typeof value !== 'object') return value;
  let copy;
  if (Array.isArray(value)) {
    copy = value.map(view);
  } else {
    copy = Object.create(null);
    for (const key of Object.keys(value)) copy[key] = view(value[key]);
  }
  Object.setPrototypeOf(copy, null);
  Object.defineProperty(copy, Symbol.toPrimitive, toPrimitive);
  return copy;
}

/** A Secret among the data also shows its `data` decoded under `stringData` (mustache has no b64dec). */
function withDecodedSecrets(data) {
  for (const key of Object.keys(data)) {
    const secret = data[key];
    if (secret?.kind !== 'Secret' || secret.data === null || typeof secret.data !== 'object') continue;
    const stringData = Object.create(null);
    for (const name of Object.keys(secret.data)) {
      if (typeof secret.data[name] === 'string') {
        stringData[name] = Buffer.from(secret.data[name], 'base64').toString('utf8');
      }
    }
    secret.stringData = stringData;
  }
  return data;
}

/** Stands for a null item of a list as a context: mustache reads properties of every context. */
const NULL_VIEW = Object.freeze(Object.create(null));

/**
 * mustache's lookup cache, kept in a Map: mustache's own is a plain object, which names such as
 * `hasOwnProperty` or `__proto__` in a template would break.
 */
function lookupCache(view) {
  const cache = new Map([['.', view]]);
  return new Proxy(Object.create(null), {
    get: (_, name) =>
      name === 'hasOwnProperty' ? (key) => key !== 'hasOwnProperty' && cache.has(key) : cache.get(name),
    set: (_, name, value) => {
      if (name !== 'hasOwnProperty') cache.set(name, value);
      return true;
    },
  });
}

class SafeContext extends Mustache.Context {
  constructor(view, parent) {
    super(view ?? NULL_VIEW, parent);
    this.cache = lookupCache(this.view);
  }

  push(view) {
    return new SafeContext(view, this);
  }
}

// One writer per thread with a bounded template cache: nothing global is changed.
const writer = new Mustache.Writer();
writer.templateCache = {
  _cache: new Map(),
  set(key, tokens) {
    if (this._cache.size >= 64) this._cache.clear();
    this._cache.set(key, tokens);
  },
  get(key) {
    return this._cache.get(key);
  },
  clear() {
    this._cache.clear();
  },
};

function renderMustache(job) {
  let output;
  try {
    const data = JSON.parse(job.data);
    output = writer.render(
      job.template,
      new SafeContext(view(withDecodedSecrets(data))),
      {},
      { escape: text },
    );
  } catch (err) {
    return {
      error: `mustache: ${job.name}: ${err instanceof Error ? err.message : String(err)}`,
      reason: 'template',
    };
  }
  if (job.maxOutput > 0 && Buffer.byteLength(output) > job.maxOutput) {
    return {
      error: `mustache: ${job.name}: output exceeds the limit of ${job.maxOutput} bytes`,
      reason: 'output-too-large',
    };
  }
  return { output };
}

// ---------------------------------------------------------------------------------------------

/**
 * Set once an exception came out of the Go code (the thread's native stack overflowed: Go code
 * recursing deeply, as a jsonnet program that nests without end can make it): the Go runtime
 * stopped in the middle of its work, so the thread must not render again.
 */
let broken = false;

parentPort.on('message', (job) => {
  goOutput = '';
  let reply;
  try {
    if (job.engine === 'documents') reply = readDocuments(job);
    else if (job.engine === 'jsonnet') {
      reply = renderGo(job);
      if (job.read) reply = readJsonnet(job, reply);
    } else {
      reply = job.engine === 'mustache' ? renderMustache(job) : renderGo(job);
      if (job.read) reply = readRendered(job, reply);
    }
  } catch (err) {
    const engine = job.engine === 'jsonnet' ? 'jsonnet' : 'template';
    const message = err instanceof Error ? err.message : String(err);
    broken ||= job.engine !== 'mustache';
    reply = {
      error:
        err instanceof RangeError && /call stack/i.test(message)
          ? `${engine}: ${job.name}: the render nested too deeply (${message})`
          : `${engine}: ${job.name}: ${message}`,
      reason: 'template',
    };
  }
  parentPort.postMessage({
    id: job.id,
    ...reply,
    memoryBytes: instance.exports.mem.buffer.byteLength,
    exited: go.exited === true || broken,
  });
});
parentPort.postMessage({ ready: true });
