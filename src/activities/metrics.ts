/**
 * What the worker measures around its workflows and activities: each operation's ending (from
 * the workflows' sink, see src/workflows/interceptors.ts), each step run again after a failure,
 * and each template rendered.
 */
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { OperationRecorder } from '../metrics/recorders.js';
import type { PlanTemplate } from '../resources/types.js';
import type { OperationSinks } from '../workflows/interceptors.js';
import type { Renderer } from './deps.js';

/** Runs whose ending a worker remembers, to count each once: the most recent ones. */
const REMEMBERED_ENDINGS = 10_000;

/**
 * The workflows' sink: an operation's ending, timed from the start of its run to now. Each run's
 * ending counts once: a sink is called when its workflow task completes, and a task whose
 * completion the server refused (a signal came meanwhile) runs again and calls it again.
 */
export function operationSinks(recorder: OperationRecorder): InjectedSinks<OperationSinks> {
  const ended = new Set<string>();
  return {
    operations: {
      finished: {
        fn(info, ending) {
          const run = `${info.workflowId}/${info.runId}`;
          if (ended.has(run)) return;
          ended.add(run);
          // A Set iterates in insertion order: the first is the oldest.
          if (ended.size > REMEMBERED_ENDINGS) ended.delete(ended.values().next().value!);
          recorder.operationFinished({
            ...ending,
            seconds: Math.max(0, Date.now() - info.runStartTime.getTime()) / 1000,
          });
        },
        callDuringReplay: false,
      },
    },
  };
}

/** Counts every attempt of a step after its first, local activities included. */
export function stepRetries(recorder: OperationRecorder): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      execute(input, next) {
        if (ctx.info.attempt > 1) recorder.stepRetried(ctx.info.activityType);
        return next(input);
      },
    },
  });
}

/** The renderer, timing each template by its type and action. */
export function timedRenderer(renderer: Renderer, recorder: OperationRecorder): Renderer {
  const timed = async <T>(template: PlanTemplate, action: string, render: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await render();
    } finally {
      recorder.templateRendered(template.type, action, (performance.now() - started) / 1000);
    }
  };
  return {
    renderObjects: (template, action, data, context) =>
      timed(template, action, () => renderer.renderObjects(template, action, data, context)),
    renderValues: (template, action, data) =>
      timed(template, action, () => renderer.renderValues(template, action, data)),
  };
}
