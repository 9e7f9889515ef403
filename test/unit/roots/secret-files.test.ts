import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../../src/config.js';
import type { Logger } from '../../../src/log.js';
import {
  adminConfigured,
  rotatingCredentials,
  rotatingSecret,
  secretReader,
  withOverlap,
} from '../../../src/roots/secret-files.js';
import { SecretVolume } from '../../support/secret-volume.js';

/** A logger that keeps its lines, to check what a warning says (and what it never says). */
function keptLog(): Logger & { lines: { level: string; msg: string; fields: unknown }[] } {
  const lines: { level: string; msg: string; fields: unknown }[] = [];
  const line = (level: string) => (msg: string, fields?: unknown) => lines.push({ level, msg, fields });
  return {
    lines,
    debug: line('debug'),
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
  } as unknown as Logger & { lines: typeof lines };
}

describe('a credential read from a file', () => {
  let volume: SecretVolume;
  let clock: number;
  const now = () => clock;

  beforeEach(() => {
    clock = 1_000_000;
    volume = new SecretVolume({ username: 'broker', password: 'first-secret\n' });
  });
  afterEach(() => volume.remove());

  test('GIVEN a value in the environment WHEN read THEN it is that value, always', () => {
    const read = secretReader({ name: 'INTEROP_BROKER_PASSWORD', value: 'given' }, { log: keptLog() });
    expect(read()).toBe('given');
  });

  test('GIVEN a mounted file WHEN read THEN its value, without the final line break', () => {
    const read = secretReader(
      { name: 'INTEROP_BROKER_PASSWORD_FILE', file: volume.path('password') },
      { log: keptLog(), now },
    );
    expect(read()).toBe('first-secret');
  });

  test('GIVEN the Secret rotated by the kubelet WHEN read after the check interval THEN the new value, not before', () => {
    const log = keptLog();
    const read = secretReader(
      { name: 'INTEROP_BROKER_PASSWORD_FILE', file: volume.path('password') },
      { log, now },
    );
    volume.write({ username: 'broker', password: 'second-secret' });
    clock += 999;
    expect(read()).toBe('first-secret');
    clock += 1;
    expect(read()).toBe('second-secret');
    expect(log.lines).toEqual([
      {
        level: 'info',
        msg: 'a credential file changed; its new value is in use',
        fields: { setting: 'INTEROP_BROKER_PASSWORD_FILE', file: volume.path('password') },
      },
    ]);
  });

  test.each([
    ['empty', '', 'is empty'],
    ['a blank line', '\n', 'is empty'],
    ['several lines', 'one\ntwo\n', 'holds more than one line'],
  ])(
    'GIVEN a file rotated to %s WHEN read THEN the last good value stays, with a warning that names no value',
    (_name, content, problem) => {
      const log = keptLog();
      const read = secretReader(
        { name: 'INTEROP_BROKER_PASSWORD_FILE', file: volume.path('password') },
        { log, now },
      );
      volume.write({ username: 'broker', password: content });
      clock += 1000;
      expect(read()).toBe('first-secret');
      clock += 1000;
      expect(read()).toBe('first-secret');
      expect(log.lines).toEqual([
        {
          level: 'warn',
          msg: 'a credential file cannot be used; the last value read stays in use',
          fields: { setting: 'INTEROP_BROKER_PASSWORD_FILE', file: volume.path('password'), problem },
        },
      ]);
      expect(JSON.stringify(log.lines)).not.toContain('first-secret');
      volume.write({ username: 'broker', password: 'repaired' });
      clock += 1000;
      expect(read()).toBe('repaired');
    },
  );

  test('GIVEN a file removed WHEN read THEN the last good value stays, with a warning', () => {
    const log = keptLog();
    const read = secretReader(
      { name: 'INTEROP_BROKER_PASSWORD_FILE', file: volume.path('password') },
      { log, now },
    );
    volume.write({ username: 'broker' });
    clock += 1000;
    expect(read()).toBe('first-secret');
    expect(log.lines[0]?.fields).toMatchObject({ problem: 'cannot be read (ENOENT)' });
  });

  test.each([
    ['missing', 'nothing', 'cannot be read (ENOENT)'],
    ['empty', 'empty', 'is empty'],
  ])(
    'GIVEN a file %s at start WHEN read THEN a configuration error names the setting and the file',
    (_n, key, problem) => {
      volume.write({ empty: '' });
      const file = volume.path(key);
      if (key === 'empty') symlinkSync(join('..data', key), file);
      const start = () => secretReader({ name: 'INTEROP_BROKER_PASSWORD_FILE', file }, { log: keptLog() });
      expect(start).toThrow(ConfigError);
      expect(start).toThrow(`INTEROP_BROKER_PASSWORD_FILE: the file ${file} ${problem}`);
    },
  );
});

describe('credentials replaced, and the overlap', () => {
  test('GIVEN a change WHEN within the overlap THEN both are accepted, after it only the new; a second change ends the first overlap', () => {
    let value = 'a';
    let clock = 0;
    const accepted = withOverlap(
      () => value,
      (x, y) => x === y,
      60_000,
      () => clock,
    );
    expect(accepted()).toEqual(['a']);
    value = 'b';
    expect(accepted()).toEqual(['b', 'a']);
    clock = 59_999;
    expect(accepted()).toEqual(['b', 'a']);
    clock = 60_000;
    expect(accepted()).toEqual(['b']);
    value = 'c';
    expect(accepted()).toEqual(['c', 'b']);
    value = 'd';
    expect(accepted()).toEqual(['d', 'c']);
  });

  test('GIVEN no overlap WHEN the value changes THEN only the new one is accepted at once', () => {
    let value = 'a';
    const accepted = withOverlap(
      () => value,
      (x, y) => x === y,
      0,
    );
    value = 'b';
    expect(accepted()).toEqual(['b']);
  });

  test('GIVEN nothing changes WHEN asked again THEN the same objects (their digests are kept by identity)', () => {
    const accepted = withOverlap(
      () => ({ username: 'u', password: 'p' }),
      (x, y) => x.username === y.username && x.password === y.password,
      1000,
    );
    const first = accepted();
    expect(accepted()).toBe(first);
    expect(accepted()[0]).toBe(first[0]);
  });
});

describe('rotating Basic-auth credentials', () => {
  let volume: SecretVolume;
  let clock: number;
  const now = () => clock;
  const settings = () => ({
    username: { name: 'INTEROP_ADMIN_USERNAME_FILE', file: volume.path('adminUsername') },
    password: { name: 'INTEROP_ADMIN_PASSWORD_FILE', file: volume.path('adminPassword') },
  });

  beforeEach(() => {
    clock = 0;
    volume = new SecretVolume({ adminUsername: 'admin', adminPassword: 'one' });
  });
  afterEach(() => volume.remove());

  test('GIVEN the Secret rotated WHEN asked THEN the new pair, and the old one for the overlap', () => {
    const accepted = rotatingCredentials(settings(), { log: keptLog(), now, overlapMs: 10_000 });
    expect(accepted()).toEqual([{ username: 'admin', password: 'one' }]);
    volume.write({ adminUsername: 'ops', adminPassword: 'two' });
    clock = 1000;
    expect(accepted()).toEqual([
      { username: 'ops', password: 'two' },
      { username: 'admin', password: 'one' },
    ]);
    clock = 11_000;
    expect(accepted()).toEqual([{ username: 'ops', password: 'two' }]);
  });

  test('GIVEN a new user with an empty password WHEN asked THEN the last good pair as a whole, never the new user with the old password', () => {
    const accepted = rotatingCredentials(settings(), { log: keptLog(), now, overlapMs: 0 });
    volume.write({ adminUsername: 'ops', adminPassword: '' });
    clock = 1000;
    expect(accepted()).toEqual([{ username: 'admin', password: 'one' }]);
    volume.write({ adminUsername: 'ops', adminPassword: 'two' });
    clock = 2000;
    expect(accepted()).toEqual([{ username: 'ops', password: 'two' }]);
  });

  test('GIVEN a check that refuses the pair read WHEN at start THEN a configuration error; WHEN rotated THEN the last pair stays', () => {
    const check = (c: { password: string }) => (c.password === 'osb' ? 'must differ' : undefined);
    volume.write({ adminUsername: 'admin', adminPassword: 'osb' });
    expect(() => rotatingCredentials(settings(), { log: keptLog(), now, overlapMs: 0, check })).toThrow(
      'must differ',
    );
    volume.write({ adminUsername: 'admin', adminPassword: 'one' });
    const log = keptLog();
    const accepted = rotatingCredentials(settings(), { log, now, overlapMs: 0, check });
    volume.write({ adminUsername: 'admin', adminPassword: 'osb' });
    clock = 1000;
    expect(accepted()).toEqual([{ username: 'admin', password: 'one' }]);
    expect(log.lines.filter((l) => l.level === 'warn')).toEqual([
      {
        level: 'warn',
        msg: 'the credentials read from their files are refused; the last ones stay in use',
        fields: {
          settings: 'INTEROP_ADMIN_USERNAME_FILE, INTEROP_ADMIN_PASSWORD_FILE',
          problem: 'must differ',
        },
      },
    ]);
  });

  test('GIVEN admin files WHEN both are missing THEN no admin API; one there THEN configured', () => {
    expect(adminConfigured(undefined)).toBe(false);
    expect(adminConfigured(settings())).toBe(true);
    const missing = {
      username: { name: 'INTEROP_ADMIN_USERNAME_FILE', file: volume.path('nothing') },
      password: { name: 'INTEROP_ADMIN_PASSWORD_FILE', file: volume.path('nothing-either') },
    };
    expect(adminConfigured(missing)).toBe(false);
    expect(adminConfigured({ ...missing, username: settings().username })).toBe(true);
  });
});

describe('a rotating token', () => {
  let volume: SecretVolume;
  let clock: number;
  const now = () => clock;
  const setting = () => ({ name: 'INTEROP_CODEC_TOKEN_FILE', file: volume.path('codecToken') });
  const check = (token: string) => (token.length >= 16 ? undefined : 'too short');

  beforeEach(() => {
    clock = 0;
    volume = new SecretVolume({ codecToken: 'first-token-0123456789' });
  });
  afterEach(() => volume.remove());

  test('GIVEN the Secret rotated WHEN asked THEN the new token, and the old one for the overlap', () => {
    const accepted = rotatingSecret(setting(), { log: keptLog(), now, overlapMs: 5_000, check });
    expect(accepted()).toEqual(['first-token-0123456789']);
    volume.write({ codecToken: 'second-token-0123456789' });
    clock = 1000;
    expect(accepted()).toEqual(['second-token-0123456789', 'first-token-0123456789']);
    clock = 7000;
    expect(accepted()).toEqual(['second-token-0123456789']);
  });

  test('GIVEN a token the check refuses WHEN at start THEN a configuration error naming the setting; WHEN rotated THEN the last token stays, the warning without it', () => {
    volume.write({ codecToken: 'short' });
    expect(() => rotatingSecret(setting(), { log: keptLog(), now, overlapMs: 0, check })).toThrow(
      new ConfigError('INTEROP_CODEC_TOKEN_FILE: too short'),
    );
    volume.write({ codecToken: 'first-token-0123456789' });
    const log = keptLog();
    const accepted = rotatingSecret(setting(), { log, now, overlapMs: 0, check });
    volume.write({ codecToken: 'tiny' });
    clock = 1000;
    expect(accepted()).toEqual(['first-token-0123456789']);
    expect(JSON.stringify(log.lines)).not.toContain('tiny');
    expect(log.lines.filter((l) => l.level === 'warn')).toHaveLength(1);
  });
});
