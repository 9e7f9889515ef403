/**
 * How each workflow crosses a new version of the workers: the long-lived ones move to the current
 * version; every operation keeps the workers' default (pinned to the version it started on).
 */
import type { VersioningBehavior } from '@temporalio/common';
import * as workflows from '../../../src/workflows/index.js';

const behaviorOf = (workflow: unknown): VersioningBehavior | undefined =>
  (workflow as { workflowDefinitionOptions?: { versioningBehavior?: VersioningBehavior } })
    .workflowDefinitionOptions?.versioningBehavior;

describe('versioning behavior of the workflows', () => {
  test('GIVEN every registered workflow THEN only the long-lived ones move to the current version', () => {
    const behaviors = Object.fromEntries(
      Object.entries(workflows).map(([name, workflow]) => [name, behaviorOf(workflow) ?? 'the default']),
    );
    expect(behaviors).toEqual({
      provisionWorkflow: 'the default',
      updateWorkflow: 'the default',
      deprovisionWorkflow: 'the default',
      bindWorkflow: 'the default',
      unbindWorkflow: 'the default',
      actionWorkflow: 'the default',
      planDryRunWorkflow: 'the default',
      secretRotationWorkflow: 'the default',
      clusterHealthWorkflow: 'AUTO_UPGRADE',
      rolloutWorkflow: 'AUTO_UPGRADE',
      secretRotationScheduleWorkflow: 'AUTO_UPGRADE',
    });
  });
});
