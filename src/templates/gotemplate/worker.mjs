// One render thread: loads Go's text/template (+ sprig) compiled to WebAssembly once, then renders
// the jobs its pool sends. Plain JavaScript because worker threads cannot load TypeScript; the
// pool (pool.ts) kills and replaces this thread when a render runs past its time limit.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';

const { wasmFile, wasmExecFile } = workerData;
await import(pathToFileURL(wasmExecFile).href);
const go = new globalThis.Go();
const { instance } = await WebAssembly.instantiate(readFileSync(wasmFile), go.importObject);
void go.run(instance);
if (typeof globalThis.interopRender !== 'function')
  throw new Error('the gotemplate module did not register interopRender');

parentPort.on('message', (job) => {
  let reply;
  try {
    const result = globalThis.interopRender(job.name, job.template, job.data, job.maxOutput);
    reply = { id: job.id, output: result.output, error: result.error };
  } catch (err) {
    reply = {
      id: job.id,
      error: `template: ${job.name}: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  parentPort.postMessage(reply);
});
parentPort.postMessage({ ready: true });
