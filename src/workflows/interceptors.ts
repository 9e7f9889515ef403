/**
 * The workflow interceptors the worker registers: each operation workflow, as it ends, tells the
 * worker how (kind, outcome, plan, cluster) through a sink. Workflow code does no I/O, and a sink
 * runs in the worker, outside the sandbox, and not again when a workflow is replayed, so each
 * ending is counted once.
 */
import { TemporalFailure } from '@temporalio/common';
import {
  isCancellation,
  proxySinks,
  workflowInfo,
  type Sinks,
  type WorkflowInterceptorsFactory,
} from '@temporalio/workflow';
import type { OperationStatus } from './messages.js';
import { OsbClusterId, OsbOperation, OsbPlanId } from './search-attributes.js';

/** How an operation workflow ended. */
export interface OperationEnding {
  readonly kind: string;
  readonly outcome: 'succeeded' | 'failed' | 'cancelled';
  readonly planId: string;
  /** The cluster it was placed on; empty when it ended before it was placed. */
  readonly clusterId: string;
}

/** The sinks the worker provides to the workflows. */
export interface OperationSinks extends Sinks {
  operations: {
    finished(ending: OperationEnding): void;
  };
}

const { operations } = proxySinks<OperationSinks>();

/** Reports the ending of a workflow that runs an OSB operation (its search attributes say which). */
function report(outcome: OperationEnding['outcome']): void {
  const info = workflowInfo();
  // A rollout carries `OsbOperation` for the Temporal UI; it is no OSB operation.
  if (info.workflowType === 'rolloutWorkflow') return;
  const attributes = info.typedSearchAttributes;
  const kind = attributes.get(OsbOperation);
  if (!kind) return;
  operations.finished({
    kind,
    outcome,
    planId: attributes.get(OsbPlanId) ?? '',
    clusterId: attributes.get(OsbClusterId) ?? '',
  });
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      async execute(input, next) {
        try {
          const result = await next(input);
          report((result as OperationStatus | undefined)?.state === 'succeeded' ? 'succeeded' : 'failed');
          return result;
        } catch (err) {
          // Any other error fails the workflow task, not the workflow: the task is retried.
          if (isCancellation(err)) report('cancelled');
          else if (err instanceof TemporalFailure) report('failed');
          throw err;
        }
      },
    },
  ],
});
