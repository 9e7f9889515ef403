/** The JSON log: one object a line, the fields the tests and the operators read, nothing secret. */
import { JsonLog, temporalLogLevel } from '../../../src/log.js';

/** A log whose lines are kept, parsed. */
function memoryLog(level?: 'debug' | 'info' | 'warn' | 'error') {
  const text: string[] = [];
  const log = new JsonLog(level, { write: (line: string) => void text.push(line) });
  const lines = () =>
    text
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log, text, lines };
}

describe('JsonLog', () => {
  test('GIVEN a component logger WHEN it writes THEN one JSON line with time, level, component, message and fields', () => {
    const { log, text, lines } = memoryLog();
    log.logger('broker').warn('catalog watch failed; restarting', { error: 'gone', attempt: 2 });
    expect(text.join('').endsWith('\n')).toBe(true);
    expect(lines()).toEqual([
      {
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        level: 'warn',
        component: 'broker',
        message: 'catalog watch failed; restarting',
        error: 'gone',
        attempt: 2,
      },
    ]);
  });

  test('GIVEN level warn WHEN info, warn and error are written THEN info is left out', () => {
    const { log, lines } = memoryLog('warn');
    const worker = log.logger('worker');
    worker.info('a');
    worker.warn('b');
    worker.error('c');
    expect(lines().map((l) => [l.level, l.message])).toEqual([
      ['warn', 'b'],
      ['error', 'c'],
    ]);
  });

  test('GIVEN fields named like secrets, at the top or one level down WHEN written THEN their values are redacted', () => {
    const { log, text } = memoryLog();
    log.logger('broker').info('oops', {
      password: 'pw-1',
      binding: { credentials: { password: 'pw-2' }, kubeconfig: 'apiVersion: v1' },
      headers: { authorization: 'Basic abc' },
      token: 'tok-1',
    });
    expect(text.join('')).not.toMatch(/pw-1|pw-2|apiVersion|Basic abc|tok-1/);
    expect(JSON.parse(text.join(''))).toMatchObject({
      password: '[redacted]',
      binding: { credentials: '[redacted]', kubeconfig: '[redacted]' },
      headers: { authorization: '[redacted]' },
    });
  });

  test('GIVEN an Error as the error field WHEN written THEN its message, and its stack as stack', () => {
    const { log, lines } = memoryLog();
    log.logger('broker').error('request failed', { error: new Error('boom'), cause: new TypeError('bad') });
    expect(lines()[0]).toMatchObject({
      error: 'boom',
      cause: 'bad',
      stack: expect.stringContaining('Error: boom'),
    });
  });
});

describe('JsonLog.temporalLogger', () => {
  test('GIVEN the SDK logs at each level WHEN level is info THEN lines of component temporal at our level names, trace and debug left out', () => {
    const { log, lines } = memoryLog('info');
    const sdk = log.temporalLogger();
    sdk.trace('t');
    sdk.debug('d');
    sdk.info('i', { sdkComponent: 'worker', taskQueue: 'q' });
    sdk.warn('w');
    sdk.error('e');
    sdk.log('WARN', 'l');
    expect(lines().map((l) => [l.level, l.message])).toEqual([
      ['info', 'i'],
      ['warn', 'w'],
      ['error', 'e'],
      ['warn', 'l'],
    ]);
    expect(lines()[0]).toMatchObject({ component: 'temporal', sdkComponent: 'worker', taskQueue: 'q' });
  });

  test('GIVEN metadata with a symbol key and an Error WHEN logged THEN the symbol is left out and the Error is its message', () => {
    const { log, lines } = memoryLog('debug');
    log.temporalLogger().debug('activity failed', {
      [Symbol('timestamp')]: 1n,
      workflowId: 'instance-i-1',
      error: new Error('not found'),
    });
    const line = lines()[0]!;
    expect(line).toMatchObject({ level: 'debug', workflowId: 'instance-i-1', error: 'not found' });
    expect(Object.keys(line)).not.toContain('timestamp');
  });

  test.each([
    ['debug', 'DEBUG'],
    ['info', 'INFO'],
    ['warn', 'WARN'],
    ['error', 'ERROR'],
  ] as const)('GIVEN our level %s THEN the SDK level %s', (ours, sdk) => {
    expect(temporalLogLevel(ours)).toBe(sdk);
  });
});
