/**
 * How each workflow crosses a new version of the workers: the long-lived ones move to the current
 * version when a versioned worker runs them (an unversioned one may declare no behaviour); every
 * operation keeps the workers' default (pinned to the version it started on).
 */
import * as workflows from '../../../src/workflows/index.js';
import { longLivedOptions } from '../../../src/workflows/versioning.js';

describe('versioning behavior of the workflows', () => {
  test('GIVEN every registered workflow THEN only the long-lived ones choose their behaviour', () => {
    const chooses = Object.fromEntries(
      Object.entries(workflows).map(([name, workflow]) => [
        name,
        typeof (workflow as { workflowDefinitionOptions?: unknown }).workflowDefinitionOptions === 'function'
          ? 'chooses'
          : 'the default',
      ]),
    );
    expect(chooses).toEqual({
      provisionWorkflow: 'the default',
      updateWorkflow: 'the default',
      deprovisionWorkflow: 'the default',
      moveWorkflow: 'the default',
      bindWorkflow: 'the default',
      unbindWorkflow: 'the default',
      actionWorkflow: 'the default',
      planDryRunWorkflow: 'the default',
      secretRotationWorkflow: 'the default',
      clusterHealthWorkflow: 'chooses',
      rolloutWorkflow: 'chooses',
      secretRotationScheduleWorkflow: 'chooses',
    });
  });

  test.each([
    [
      'a versioned worker',
      { deploymentName: 'interoperator', buildId: 'v2' },
      { versioningBehavior: 'AUTO_UPGRADE' },
    ],
    ['an unversioned worker', { deploymentName: '', buildId: '@temporalio/worker@1.24.0+0a1b' }, {}],
    ['a worker of no version', undefined, {}],
  ])('GIVEN a long-lived workflow run by %s THEN its options are %j', (_name, version, options) => {
    expect(longLivedOptions(version)).toEqual(options);
  });
});
