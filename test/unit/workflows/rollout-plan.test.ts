import type { RolloutProgress, RolloutRequest, RolloutSettings } from '../../../src/admin/contract.js';
import {
  afterBatch,
  claimsToRelease,
  commanded,
  counted,
  doneWaiting,
  failedInstances,
  settledInstances,
  freshProgress,
  heard,
  initialRollout,
  mustStop,
  nextBatch,
  nextMove,
  refusal,
  retargeted,
  seen,
  startedInWindow,
  targeted,
  toReadAhead,
  windowWave,
  withResult,
  type Batch,
  type Rollout,
  type RolloutCommand,
} from '../../../src/workflows/rollout-plan.js';

const SETTINGS: RolloutSettings = { canary: 1, maxConcurrency: 3, soakSeconds: 0, maxFailures: 0 };
const REQUEST: RolloutRequest = { planId: 'p1', revision: 'r1', requestedBy: 'plan change' };

/** A rollout towards r1 with SETTINGS (or `settings`), changed by `fields`. */
function rolloutOf(
  fields: Partial<Rollout> = {},
  progress: Partial<RolloutProgress> = {},
  settings: Partial<RolloutSettings> = {},
): Rollout {
  const base = targeted(initialRollout(REQUEST), REQUEST, {
    revision: 'r1',
    settings: { ...SETTINGS, ...settings },
  });
  return { ...base, ...fields, progress: { ...base.progress, ...progress } };
}

const ids = (n: number, from = 1) => Array.from({ length: n }, (_, k) => `i${k + from}`);

describe('a fresh rollout', () => {
  test.each([
    ['a canary', { canary: 2 }, { state: 'canary', wave: 0 }],
    ['no canary', { canary: 0 }, { state: 'waves', wave: 1 }],
  ])(
    'GIVEN %s WHEN it starts THEN it is in that stage, with nothing counted',
    (_name, settings, expected) => {
      expect(freshProgress(REQUEST, { ...SETTINGS, ...settings })).toEqual({
        planId: 'p1',
        revision: 'r1',
        settings: { ...SETTINGS, ...settings },
        total: 0,
        done: 0,
        failed: 0,
        inFlight: 0,
        results: {},
        requestedBy: 'plan change',
        ...expected,
      });
    },
  );

  test.each([
    [
      'no carried state',
      undefined,
      { paused: false, failureLimit: 0, startedInWindow: 0, revision: 'r1', done: 0 },
    ],
    [
      'a carried run of the same revision',
      {
        progress: { ...freshProgress(REQUEST, SETTINGS), done: 4 },
        paused: true,
        failureLimit: 2,
        startedInWindow: 7,
      },
      { paused: true, failureLimit: 2, startedInWindow: 7, revision: 'r1', done: 4 },
    ],
    [
      'a carried run of another revision',
      {
        progress: { ...freshProgress({ ...REQUEST, revision: 'r0' }, SETTINGS), done: 4 },
        paused: true,
        failureLimit: 2,
        startedInWindow: 7,
      },
      { paused: true, failureLimit: 0, startedInWindow: 0, revision: 'r1', done: 0 },
    ],
  ])('GIVEN %s WHEN a run starts THEN it takes up what it should', (_name, carried, expected) => {
    const rollout = initialRollout(REQUEST, carried);
    expect({
      paused: rollout.paused,
      failureLimit: rollout.failureLimit,
      startedInWindow: rollout.startedInWindow,
      revision: rollout.progress.revision,
      done: rollout.progress.done,
    }).toEqual(expected);
  });
});

describe('the next batch', () => {
  test.each<[string, Partial<RolloutProgress>, Partial<RolloutSettings>, string[], Batch | undefined]>([
    ['nothing behind', {}, {}, [], undefined],
    [
      'the canary stage (wave 0)',
      { wave: 0 },
      { canary: 2 },
      ids(10),
      { kind: 'canary', instanceIds: ['i1', 'i2'], concurrency: 2 },
    ],
    [
      'waves with a soak',
      { wave: 1 },
      { soakSeconds: 30 },
      ids(10),
      { kind: 'wave', instanceIds: ['i1', 'i2', 'i3'], concurrency: 3 },
    ],
    [
      'no soak: a sliding window over all behind',
      { wave: 1 },
      {},
      ids(5),
      { kind: 'window', instanceIds: ids(5), concurrency: 3 },
    ],
  ])(
    'GIVEN %s WHEN the next batch is chosen THEN it is %j',
    (_name, progress, settings, behind, expected) => {
      expect(nextBatch(rolloutOf({}, progress, settings), behind)).toEqual(expected);
    },
  );

  test.each([
    [1, 3, 1],
    [3, 3, 1],
    [4, 3, 2],
    [7, 3, 3],
    [0, 3, 1],
  ])('GIVEN %i updates started in a window of %i THEN the wave is %i', (started, max, wave) => {
    expect(windowWave(started, max)).toBe(wave);
  });

  test('GIVEN a window WHEN four updates started THEN the rollout counts them and is in wave 2', () => {
    let rollout = rolloutOf({}, { wave: 1 });
    for (let k = 0; k < 4; k++) rollout = startedInWindow(rollout);
    expect([rollout.startedInWindow, rollout.progress.wave]).toEqual([4, 2]);
  });
});

describe('after a batch', () => {
  const canary: Batch = { kind: 'canary', instanceIds: ['i1'], concurrency: 1 };
  const wave: Batch = { kind: 'wave', instanceIds: ids(3), concurrency: 3 };
  const window: Batch = { kind: 'window', instanceIds: ids(3), concurrency: 3 };
  test.each<
    [
      string,
      Batch,
      number,
      Partial<Rollout>,
      Partial<RolloutProgress>,
      Partial<RolloutSettings>,
      string,
      Partial<RolloutProgress>,
    ]
  >([
    ['every instance busy', wave, 0, {}, { wave: 1 }, {}, 'look-again-later', { wave: 1, state: 'canary' }],
    [
      'a failure over the limit',
      wave,
      3,
      {},
      { wave: 1, failed: 1 },
      {},
      'halt',
      { wave: 1, state: 'halted' },
    ],
    [
      'a failure within a raised limit',
      wave,
      3,
      { failureLimit: 1 },
      { wave: 1, failed: 1 },
      {},
      'next',
      { wave: 2 },
    ],
    [
      'the canary with a soak',
      canary,
      1,
      {},
      { wave: 0 },
      { soakSeconds: 30 },
      'soak',
      { wave: 1, state: 'soaking' },
    ],
    ['the canary without a soak', canary, 1, {}, { wave: 0 }, {}, 'next', { wave: 1, state: 'canary' }],
    [
      'a wave with a soak',
      wave,
      3,
      {},
      { wave: 2, state: 'waves' },
      { soakSeconds: 30 },
      'soak',
      { wave: 3, state: 'soaking' },
    ],
    ['a window', window, 3, {}, { wave: 2, state: 'waves' }, {}, 'next', { wave: 2, state: 'waves' }],
  ])(
    'GIVEN %s WHEN the batch ended THEN the rollout does what it should',
    (_name, batch, ended, fields, progress, settings, then, expected) => {
      const failed = progress.failed ?? 0;
      let rollout = rolloutOf(fields, progress, settings);
      for (let k = 0; k < failed; k++) rollout = withResult(rollout, `f${k}`, { state: 'failed' });
      const after = afterBatch(rollout, batch, ended);
      expect(after.then).toBe(then);
      expect(after.rollout.progress).toMatchObject(expected);
    },
  );
});

describe('when no update may start', () => {
  test.each<[string, Partial<Rollout>, number, boolean, boolean]>([
    ['a rollout running', {}, 0, false, false],
    ['a pause', { paused: true }, 0, false, true],
    ['an abort', { aborted: true }, 0, false, true],
    ['a newer revision heard', { newer: { ...REQUEST, revision: 'r2' } }, 0, false, true],
    ['one failure, none tolerated', {}, 1, false, true],
    ['one failure, one tolerated', { failureLimit: 1 }, 1, false, false],
    ['a long history', {}, 0, true, true],
  ])('GIVEN %s THEN it must stop: %s', (_name, fields, failures, historyLong, expected) => {
    let rollout = rolloutOf(fields);
    for (let k = 0; k < failures; k++) rollout = withResult(rollout, `f${k}`, { state: 'failed' });
    expect(mustStop(rollout, historyLong)).toBe(expected);
  });

  test.each<[string, Partial<Rollout>, Partial<RolloutProgress>, boolean, string]>([
    ['a newer revision, even aborted', { newer: REQUEST, aborted: true }, {}, false, 'retarget'],
    ['an abort, even paused', { aborted: true, paused: true }, {}, false, 'abort'],
    ['a pause', { paused: true }, {}, true, 'wait'],
    ['a halt', {}, { state: 'halted' }, false, 'wait'],
    ['a long history', {}, {}, true, 'continue-as-new'],
    ['nothing in the way', {}, {}, false, 'look'],
  ])(
    'GIVEN %s WHEN no update is in flight THEN the next move is to %s',
    (_name, fields, progress, long, move) => {
      expect(nextMove(rolloutOf(fields, progress), long)).toBe(move);
    },
  );

  test.each<[string, Partial<Rollout>, Partial<RolloutProgress>, boolean]>([
    ['still paused', { paused: true }, {}, false],
    ['still halted', {}, { state: 'halted' }, false],
    ['resumed', {}, { state: 'waves' }, true],
    ['aborted while paused', { paused: true, aborted: true }, {}, true],
    ['a newer revision while halted', { newer: REQUEST }, { state: 'halted' }, true],
  ])('GIVEN a waiting rollout %s THEN it is done waiting: %s', (_name, fields, progress, expected) => {
    expect(doneWaiting(rolloutOf(fields, progress))).toBe(expected);
  });
});

describe('pause, resume and abort', () => {
  test.each<[RolloutCommand, RolloutProgress['state'], string | undefined]>([
    ['pause', 'canary', undefined],
    ['pause', 'waves', undefined],
    ['pause', 'soaking', undefined],
    ['pause', 'paused', 'The rollout of plan p1 to revision r1 is already paused.'],
    [
      'pause',
      'halted',
      'The rollout of plan p1 to revision r1 is halted: it starts no update until it is resumed or aborted.',
    ],
    ['pause', 'done', 'The rollout of plan p1 to revision r1 is done; there is nothing to pause.'],
    ['pause', 'aborted', 'The rollout of plan p1 to revision r1 was aborted; there is nothing to pause.'],
    ['resume', 'paused', undefined],
    ['resume', 'halted', undefined],
    ['resume', 'waves', 'The rollout of plan p1 to revision r1 is not paused (it is waves).'],
    ['resume', 'soaking', 'The rollout of plan p1 to revision r1 is not paused (it is soaking).'],
    ['resume', 'done', 'The rollout of plan p1 to revision r1 is done; there is nothing to resume.'],
    ['abort', 'canary', undefined],
    ['abort', 'paused', undefined],
    ['abort', 'halted', undefined],
    ['abort', 'done', 'The rollout of plan p1 to revision r1 is done; there is nothing to abort.'],
    ['abort', 'aborted', 'The rollout of plan p1 to revision r1 was aborted; there is nothing to abort.'],
  ])('GIVEN a rollout %2$s WHEN asked to %1$s THEN the refusal is %3$j', (command, state, expected) => {
    expect(refusal(command, { ...freshProgress(REQUEST, SETTINGS), state })).toBe(expected);
  });

  test.each<
    [
      string,
      RolloutCommand,
      Partial<Rollout>,
      Partial<RolloutProgress>,
      Partial<Rollout>,
      Partial<RolloutProgress>,
    ]
  >([
    ['running', 'pause', {}, { state: 'waves' }, { paused: true, aborted: false }, { state: 'paused' }],
    ['paused', 'resume', { paused: true }, { state: 'waves' }, { paused: false }, { state: 'waves' }],
    ['paused', 'abort', { paused: true }, { state: 'waves' }, { aborted: true }, { state: 'aborted' }],
    [
      'halted in the canary batch, one failure over none tolerated',
      'resume',
      {},
      { state: 'halted', wave: 0 },
      { failureLimit: 1 },
      { state: 'canary' },
    ],
    ['halted in a wave', 'resume', {}, { state: 'halted', wave: 2 }, { failureLimit: 1 }, { state: 'waves' }],
  ])(
    'GIVEN a rollout %s WHEN the admin says %s THEN it takes the command and shows it',
    (_name, command, fields, progress, expected, shown) => {
      let rollout = rolloutOf(fields, progress);
      if (progress.state === 'halted') rollout = withResult(rollout, 'f1', { state: 'failed' });
      const after = commanded(rollout, command);
      expect(after).toMatchObject(expected);
      expect(seen(after)).toMatchObject(shown);
    },
  );
});

describe('a newer revision', () => {
  test.each<[string, RolloutRequest, boolean]>([
    ['the revision rolling out again', REQUEST, false],
    ['another revision', { ...REQUEST, revision: 'r2' }, true],
    ['the same revision with settings', { ...REQUEST, settings: { canary: 0 } }, true],
  ])('GIVEN %s WHEN heard THEN it supersedes the rollout: %s', (_name, next, supersedes) => {
    expect(heard(rolloutOf(), next).newer).toEqual(supersedes ? next : undefined);
  });

  test.each<[string, RolloutRequest, string, boolean]>([
    ['the plan still on the rolling revision (a late signal)', { ...REQUEST, revision: 'r0' }, 'r1', false],
    ['the plan on another revision', { ...REQUEST, revision: 'r2' }, 'r2', true],
    ['new settings', { ...REQUEST, settings: { maxConcurrency: 9 } }, 'r1', true],
  ])('GIVEN %s WHEN the plan was read THEN the rollout starts over: %s', (_name, next, revision, over) => {
    let rollout = rolloutOf({ failureLimit: 5, startedInWindow: 4, paused: true }, { wave: 2 });
    rollout = withResult(rollout, 'i1', { state: 'updated' });
    const after = retargeted(rollout, next, { revision, settings: { ...SETTINGS, maxConcurrency: 9 } });
    if (!over) {
      expect(after).toBe(rollout);
      return;
    }
    expect(after).toMatchObject({
      request: { ...next, revision },
      failureLimit: 0,
      startedInWindow: 0,
      paused: true,
      progress: { revision, wave: 0, state: 'canary', done: 0, results: {} },
    });
  });
});

describe('the progress', () => {
  test('GIVEN results and instances behind WHEN counted THEN done, failed, in flight and a total that never shrinks', () => {
    const progress = {
      ...freshProgress(REQUEST, SETTINGS),
      total: 3,
      results: {
        a: { state: 'updated' },
        b: { state: 'failed' },
        c: { state: 'in flight' },
        d: { state: 'waiting' },
      },
    } as RolloutProgress;
    expect(counted(progress, 4)).toMatchObject({ done: 1, failed: 1, inFlight: 1, total: 7 });
    expect(counted({ ...progress, total: 10 }, 0)).toMatchObject({ total: 10 });
  });

  test.each<[string, Partial<Rollout>, Partial<RolloutProgress>, RolloutProgress['state']]>([
    ['running', {}, { state: 'waves' }, 'waves'],
    ['paused while soaking', { paused: true }, { state: 'soaking' }, 'paused'],
    ['aborted while updates finish', { aborted: true }, { state: 'waves' }, 'aborted'],
    ['aborted while halted', { aborted: true }, { state: 'halted' }, 'aborted'],
    ['done, though paused', { paused: true }, { state: 'done' }, 'done'],
  ])('GIVEN a rollout %s THEN the outside sees it %s', (_name, fields, progress, state) => {
    expect(seen(rolloutOf(fields, progress)).state).toBe(state);
  });

  test('GIVEN an instance gone WHEN its result is taken out THEN it is not counted', () => {
    let rollout = withResult(rolloutOf(), 'i1', { state: 'in flight' });
    rollout = withResult(rollout, 'i1', undefined);
    expect([rollout.progress.results, rollout.progress.inFlight]).toEqual([{}, 0]);
  });

  test('GIVEN failed and updated instances THEN only the failed are left out of the next look', () => {
    let rollout = withResult(rolloutOf(), 'i1', { state: 'failed', description: 'no' });
    rollout = withResult(rollout, 'i2', { state: 'updated' });
    expect(failedInstances(rollout)).toEqual(['i1']);
  });

  test.each([
    ['a plan', undefined, ['i1']],
    [
      'a referenced object’s change',
      { clusterId: 'c', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'n', name: 'm' },
      ['i1', 'i2'],
    ],
  ])(
    'GIVEN the rollout of %s with failed, updated and waiting instances THEN those not taken again are %j',
    (_name, reference, settled) => {
      const request = { ...REQUEST, ...(reference ? { reference } : {}) };
      let rollout: Rollout = { ...rolloutOf(), request };
      rollout = withResult(rollout, 'i1', { state: 'failed', description: 'no' });
      rollout = withResult(rollout, 'i2', { state: 'updated' });
      rollout = withResult(rollout, 'i3', { state: 'waiting', description: 'busy' });
      expect(settledInstances(rollout)).toEqual(settled);
    },
  );

  test('GIVEN the rollout of a referenced object’s change THEN its progress and refusals name the object', () => {
    const reference = { clusterId: 'c', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'n', name: 'm' };
    const rollout = initialRollout({ ...REQUEST, revision: '42', reference });
    expect(rollout.progress.reference).toEqual(reference);
    expect(refusal('resume', rollout.progress)).toBe(
      'The rollout of the change of ConfigMap n/m (version 42) to the instances of plan p1 is not paused (it is canary).',
    );
  });
});

describe('reading ahead and taking claims back', () => {
  test.each<[string, string[], string[], number, string[]]>([
    ['nothing read', ids(5), [], 3, ['i1', 'i2', 'i3']],
    ['some read', ids(5), ['i1', 'i3'], 3, ['i2', 'i4', 'i5']],
    ['an instance named twice', ['i1', 'i1', 'i2'], [], 3, ['i1', 'i2']],
    ['all read', ids(2), ids(2), 3, []],
  ])(
    'GIVEN %s WHEN the next are read ahead THEN they are %j',
    (_name, queue, read, concurrency, expected) => {
      expect(toReadAhead(queue, new Set(read), concurrency)).toEqual(expected);
    },
  );

  test('GIVEN instances read ahead but not started WHEN the batch ends THEN only the claimed are released', () => {
    expect(
      claimsToRelease(
        new Map<string, { claimedAt?: string } | { busy: string } | { gone: true }>([
          ['i1', { claimedAt: '2026-01-01T00:00:00Z' }],
          ['i2', {}],
          ['i3', { busy: 'waiting for its bind to end' }],
          ['i4', { gone: true }],
        ]),
      ),
    ).toEqual([{ instanceId: 'i1', claimedAt: '2026-01-01T00:00:00Z' }]);
  });
});
