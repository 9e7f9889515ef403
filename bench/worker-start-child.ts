/**
 * A bare worker of the operation workflows for bench/worker-start.ts: `prebuilt` loads the bundle
 * `npm run build` wrote, `at-start` bundles the compiled workflows with webpack first. It prints
 * `polling` once it polls, and runs until SIGTERM.
 */
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { operationSinks } from '../src/activities/metrics.js';
import { workflowBundle } from '../src/roots/workflow-bundle.js';

Runtime.install({ logger: new DefaultLogger('WARN') });
const mode = process.argv[2];
const connection = await NativeConnection.connect({ address: process.env.INTEROP_TEMPORAL_ADDRESS! });
const worker = await Worker.create({
  connection,
  namespace: process.env.INTEROP_TEMPORAL_NAMESPACE!,
  taskQueue: `${process.env.INTEROP_TASK_QUEUE!}-bare`,
  ...(mode === 'prebuilt'
    ? { workflowBundle: workflowBundle(false) }
    : {
        workflowsPath: fileURLToPath(new URL('../src/workflows/index.js', import.meta.url)),
        interceptors: {
          workflowModules: [fileURLToPath(new URL('../src/workflows/interceptors.js', import.meta.url))],
        },
      }),
  sinks: operationSinks({
    operationFinished: () => undefined,
    stepRetried: () => undefined,
    templateRendered: () => undefined,
  }),
});
process.once('SIGTERM', () => worker.shutdown());
const running = worker.run();
console.log('polling');
await running;
await connection.close();
