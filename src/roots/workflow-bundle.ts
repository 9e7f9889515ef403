/**
 * The workflow code as workers load it: bundled once, by `npm run build`, into `dist/bundles/`, so
 * that no worker runs webpack when it starts (the image ships the bundles). Two bundles of the same
 * workflows, each with the interceptor that reports every operation's ending to the worker's sink
 * (src/workflows/interceptors.ts) and the payload converter (src/temporal/payload-converter.ts):
 * - `workflows.js`, for a worker that does not trace;
 * - `workflows-traced.js`, with OpenTelemetry's workflow interceptors too, for a worker that does.
 *
 * Run as a script (`node dist/src/roots/workflow-bundle.js`), it writes both.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTORS as TRACING_INTERCEPTORS } from '../tracing.js';
import { PAYLOAD_CONVERTER_PATH } from '../temporal/connection.js';

/** Where `npm run build` writes the bundles, from this file's place in `dist/src/roots/`. */
const BUNDLES_DIR = fileURLToPath(new URL('../../bundles/', import.meta.url));

/** The bundle's file name for a worker that traces or not. */
const bundleFile = (traced: boolean) => (traced ? 'workflows-traced.js' : 'workflows.js');

/** The prebuilt bundle a worker loads (`workflowBundle` of its options). */
export function workflowBundle(traced: boolean): { readonly codePath: string } {
  return { codePath: path.join(BUNDLES_DIR, bundleFile(traced)) };
}

/** Bundles the compiled workflows (beside this file's `dist/src/`) into `dist/bundles/`. */
export async function writeWorkflowBundles(): Promise<string[]> {
  const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));
  const operationEndings = fileURLToPath(new URL('../workflows/interceptors.js', import.meta.url));
  mkdirSync(BUNDLES_DIR, { recursive: true });
  const written: string[] = [];
  for (const traced of [false, true]) {
    const { code } = await bundleWorkflowCode({
      workflowsPath,
      workflowInterceptorModules: [operationEndings, ...(traced ? [TRACING_INTERCEPTORS] : [])],
      // The workflows mark the steps for a cluster's own worker, which this converter recognises.
      payloadConverterPath: PAYLOAD_CONVERTER_PATH,
      logger: new DefaultLogger('WARN'),
    });
    const file = path.join(BUNDLES_DIR, bundleFile(traced));
    // Written aside and renamed: a worker starting meanwhile reads the old bundle or the new one.
    writeFileSync(`${file}.tmp`, code);
    renameSync(`${file}.tmp`, file);
    written.push(file);
  }
  return written;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const files = await writeWorkflowBundles();
  console.log(
    `workflow bundles written in ${((Date.now() - started) / 1000).toFixed(1)} s: ${files.join(', ')}`,
  );
}
