/**
 * Credentials that rotate without a restart. A credential's setting is its value, or a file (a key
 * of a mounted Kubernetes Secret): the file is read at start, and its `stat` is checked again at
 * most once per interval on use; when it changed (the kubelet swaps a mounted Secret's files at
 * once by replacing the `..data` link, so every key's file changes identity and time), it is read
 * again. Credentials replaced that way stay accepted for an overlap beside the new ones, so that
 * the platforms holding them can be switched over.
 *
 * What a file says is never logged: a warning names the setting and the file, never the value.
 */
import { readFileSync, statSync } from 'node:fs';
import { ConfigError, type CredentialSettings, type SecretSetting } from '../config.js';
import type { Credentials } from '../api/app.js';
import type { Logger } from '../log.js';

/** How the files are watched; the defaults serve production, tests shorten them. */
export interface SecretFileOptions {
  /** Where a file that cannot be read again (the last value is kept) is reported. */
  readonly log: Logger;
  /** How often, at most, a file's `stat` is checked. @default 1000 */
  readonly checkIntervalMs?: number;
  /** The clock, in milliseconds. @default Date.now */
  readonly now?: () => number;
}

/** A value read from a file, or the reason it could not be. */
type Read = { readonly value: string } | { readonly problem: string };

/**
 * A file's text without one final line break (`echo secret > file` writes one, a Secret's key
 * usually has none); an empty or unreadable file is a problem, said without the content.
 */
function readSecretFile(file: string): Read {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return { problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') return { problem: 'is empty' };
  if (/[\r\n]/.test(value)) return { problem: 'holds more than one line' };
  return { value };
}

/** What identifies one version of a file: the kubelet's swap changes its inode and its time. */
function fileVersion(file: string): string {
  try {
    const s = statSync(file);
    return `${s.dev}:${s.ino}:${s.mtimeMs}:${s.size}`;
  } catch {
    return 'missing';
  }
}

/**
 * A setting's current value. A value given in the environment is returned as it is. A file must be
 * readable and hold a value at start ({@link ConfigError} otherwise: a broker that cannot read its
 * credentials should not start); later, a file that changed is read again, and if it cannot be
 * (missing, empty, several lines), the last good value stays and a warning says so, once per
 * version of the file.
 */
export function secretReader(setting: SecretSetting, options: SecretFileOptions): () => string {
  const read = watchedSecret(setting, options);
  return () => read().value;
}

/**
 * {@link secretReader}, which also tells whether the file's current version is the value returned
 * (`usable`), or a version that could not be used (the last good value is returned).
 */
function watchedSecret(
  setting: SecretSetting,
  options: SecretFileOptions,
): () => { value: string; usable: boolean } {
  if ('value' in setting) {
    const current = { value: setting.value, usable: true };
    return () => current;
  }
  const { file, name } = setting;
  const interval = options.checkIntervalMs ?? 1000;
  const now = options.now ?? Date.now;
  let version = fileVersion(file);
  const first = readSecretFile(file);
  if ('problem' in first) throw new ConfigError(`${name}: the file ${file} ${first.problem}`);
  let current = { value: first.value, usable: true };
  let checkedAt = now();
  return () => {
    const t = now();
    if (t - checkedAt < interval) return current;
    checkedAt = t;
    const seen = fileVersion(file);
    if (seen === version) return current;
    version = seen;
    const read = readSecretFile(file);
    if ('problem' in read) {
      options.log.warn('a credential file cannot be used; the last value read stays in use', {
        setting: name,
        file,
        problem: read.problem,
      });
      current = { value: current.value, usable: false };
    } else {
      if (read.value !== current.value)
        options.log.info('a credential file changed; its new value is in use', { setting: name, file });
      current = { value: read.value, usable: true };
    }
    return current;
  };
}

/**
 * The values `current` returns, with the one it returned before for `overlapMs` after it changed
 * (one generation: a second change ends the first one's overlap). The same objects are returned
 * while nothing changes, so their digests can be kept.
 */
export function withOverlap<T>(
  current: () => T,
  same: (a: T, b: T) => boolean,
  overlapMs: number,
  now: () => number = Date.now,
): () => readonly T[] {
  let latest = current();
  let accepted: readonly T[] = [latest];
  let previous: { value: T; until: number } | undefined;
  return () => {
    const value = current();
    const t = now();
    let changed = false;
    if (!same(value, latest)) {
      previous = overlapMs > 0 ? { value: latest, until: t + overlapMs } : undefined;
      latest = value;
      changed = true;
    }
    if (previous && t >= previous.until) {
      previous = undefined;
      changed = true;
    }
    if (changed) accepted = previous ? [latest, previous.value] : [latest];
    return accepted;
  };
}

const sameCredentials = (a: Credentials, b: Credentials): boolean =>
  a.username === b.username && a.password === b.password;

/**
 * The credentials a Basic-auth API accepts now: those of its settings, and for `overlapMs` after
 * they change, the ones before. The pair changes as a whole: while either file cannot be used,
 * the last good pair stays (never a new user with an old password). `check` may refuse a pair read
 * from the files (say why): the last good pair then stays too, with a warning. At start a refused
 * pair is a {@link ConfigError}.
 */
export function rotatingCredentials(
  settings: CredentialSettings,
  options: SecretFileOptions & {
    readonly overlapMs: number;
    readonly check?: (c: Credentials) => string | undefined;
  },
): () => readonly Credentials[] {
  const username = watchedSecret(settings.username, options);
  const password = watchedSecret(settings.password, options);
  let good: Credentials = { username: username().value, password: password().value };
  const startProblem = options.check?.(good);
  if (startProblem) throw new ConfigError(startProblem);
  let refused: Credentials | undefined;
  const current = (): Credentials => {
    const [user, secret] = [username(), password()];
    if (!user.usable || !secret.usable) return good;
    const read = { username: user.value, password: secret.value };
    if (sameCredentials(read, good)) return good;
    const problem = options.check?.(read);
    if (!problem) return (good = read);
    if (!refused || !sameCredentials(read, refused))
      options.log.warn('the credentials read from their files are refused; the last ones stay in use', {
        settings: `${settings.username.name}, ${settings.password.name}`,
        problem,
      });
    refused = read;
    return good;
  };
  return withOverlap(current, sameCredentials, options.overlapMs, options.now);
}

/**
 * One rotating secret (a token): its value now, with the one before for `overlapMs` after it
 * changed. `check` may refuse a value (say why): at start that is a {@link ConfigError}; later the
 * last good value stays, with a warning that never holds the value.
 */
export function rotatingSecret(
  setting: SecretSetting,
  options: SecretFileOptions & {
    readonly overlapMs: number;
    readonly check?: (value: string) => string | undefined;
  },
): () => readonly string[] {
  const read = watchedSecret(setting, options);
  let good = read().value;
  const startProblem = options.check?.(good);
  if (startProblem) throw new ConfigError(`${setting.name}: ${startProblem}`);
  let refused: string | undefined;
  const current = (): string => {
    const { value, usable } = read();
    if (!usable || value === good) return good;
    const problem = options.check?.(value);
    if (!problem) return (good = value);
    if (value !== refused)
      options.log.warn('the secret read from its file is refused; the last one stays in use', {
        setting: setting.name,
        problem,
      });
    refused = value;
    return good;
  };
  return withOverlap(current, (a, b) => a === b, options.overlapMs, options.now);
}

/**
 * Whether the admin API is configured: settings given as values, or files of which at least one
 * exists (a mounted Secret without the admin keys leaves both missing: no admin API).
 */
export function adminConfigured(settings: CredentialSettings | undefined): settings is CredentialSettings {
  if (!settings) return false;
  const files = [settings.username, settings.password].filter(
    (s): s is Extract<SecretSetting, { file: string }> => 'file' in s,
  );
  return files.length < 2 || files.some((s) => fileVersion(s.file) !== 'missing');
}
