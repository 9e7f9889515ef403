/** A worker deployment's description read as an upgrade needs it: current, ramping, drained. */
import {
  deploymentSummary,
  retirable,
  summaryText,
  type WorkerDeploymentDescription,
} from '../../../src/temporal/worker-version-status.js';

const version = (buildId: string, status: number, drainageStatus = 0) => ({
  deploymentVersion: { buildId, deploymentName: 'interoperator' },
  status,
  drainageStatus,
});

const UPGRADING: WorkerDeploymentDescription = {
  name: 'interoperator',
  routingConfig: {
    currentDeploymentVersion: { buildId: '1.5.0' },
    rampingDeploymentVersion: { buildId: '1.6.0' },
    rampingVersionPercentage: 25,
  },
  versionSummaries: [
    version('1.6.0', 3),
    version('1.5.0', 2),
    version('1.4.2', 4, 1),
    version('1.3.0', 5, 2),
  ],
};

describe('deploymentSummary', () => {
  test('GIVEN a deployment mid-upgrade THEN the current, the ramping and each build’s state, by build id', () => {
    expect(deploymentSummary('interoperator', UPGRADING)).toEqual({
      deploymentName: 'interoperator',
      current: '1.5.0',
      ramping: { buildId: '1.6.0', percent: 25 },
      versions: [
        { buildId: '1.3.0', state: 'drained' },
        { buildId: '1.4.2', state: 'draining' },
        { buildId: '1.5.0', state: 'current' },
        { buildId: '1.6.0', state: 'ramping' },
      ],
    });
  });

  test.each([
    ['a version status', version('a', 1), 'inactive'],
    ['only a drainage status: draining', version('a', 0, 1), 'draining'],
    ['only a drainage status: drained', version('a', 0, 2), 'drained'],
    ['neither', version('a', 0, 0), 'created'],
  ])('GIVEN %s THEN the state is read from it', (_name, summary, state) => {
    expect(deploymentSummary('d', { versionSummaries: [summary] }).versions).toEqual([
      { buildId: 'a', state },
    ]);
  });

  test('GIVEN an empty description THEN no current, no ramping, no version', () => {
    expect(deploymentSummary('d', {})).toEqual({ deploymentName: 'd', versions: [] });
  });
});

describe('retirable', () => {
  const summary = deploymentSummary('interoperator', UPGRADING);
  test.each([
    ['1.3.0', true],
    ['1.4.2', false],
    ['1.5.0', false],
    ['1.6.0', false],
    ['0.9.0', true],
  ])('GIVEN build %s THEN its workers may be removed: %s', (buildId, expected) => {
    expect(retirable(summary, buildId)).toBe(expected);
  });
});

describe('summaryText', () => {
  test('GIVEN a deployment mid-upgrade THEN one aligned line per build, the ramping share shown', () => {
    expect(summaryText(deploymentSummary('interoperator', UPGRADING))).toBe(
      [
        'worker deployment interoperator',
        '1.3.0  drained',
        '1.4.2  draining',
        '1.5.0  current',
        '1.6.0  ramping (25% of new workflows)',
        '',
      ].join('\n'),
    );
  });

  test('GIVEN no version THEN it says so', () => {
    expect(summaryText({ deploymentName: 'd', versions: [] })).toBe('worker deployment d: no version yet\n');
  });
});
