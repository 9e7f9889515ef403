/**
 * Where the processes write what happened: the logger type, and one JSON object a line (pino) for
 * our code and for the Temporal SDK and its Core alike.
 */
import type { LogLevel as TemporalLogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

/** Where a component writes what happened. Fields are written as they are: never pass secrets. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A logger that drops everything. */
export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The levels written, least severe first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * Field names whose values are never written, at the top of a line's fields or one level down:
 * a mistake that passes a secret still writes `[redacted]`, not the secret.
 */
export const REDACTED_FIELDS: readonly string[] = [
  'password',
  'credentials',
  'kubeconfig',
  'token',
  'authorization',
  'client-key-data',
  'clientKeyData',
  'payloadKeys',
];

/**
 * The root of a process's log: every line one JSON object with `time` (ISO 8601), `level`
 * (`debug`, `info`, `warn` or `error`), `component` and `message`, then the fields.
 */
export class JsonLog {
  private readonly root: PinoLogger;

  /**
   * @param level the least severe level written. @default info
   * @param destination where the lines go. @default stdout, written synchronously so that no line
   *   is lost when the process exits
   */
  constructor(level: LogLevel = 'info', destination?: DestinationStream) {
    this.root = pino(
      {
        level,
        base: undefined,
        messageKey: 'message',
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
        redact: {
          paths: REDACTED_FIELDS.flatMap((f) => [`["${f}"]`, `*["${f}"]`]),
          censor: '[redacted]',
        },
      },
      destination ?? pino.destination({ dest: 1, sync: true }),
    );
  }

  /** The logger of one component (`broker`, `worker`, ...). */
  logger(component: string): Logger {
    const log = this.root.child({ component });
    return {
      info: (message, fields) => log.info(plain(fields), message),
      warn: (message, fields) => log.warn(plain(fields), message),
      error: (message, fields) => log.error(plain(fields), message),
    };
  }

  /**
   * The Temporal runtime's logger (`Runtime.install({ logger })`): what the SDK, the Core (with
   * `telemetryOptions.logging.forward`) and workflow and activity code log, as lines of this log
   * with `component: temporal` and the SDK's metadata (`sdkComponent`, `workflowId`, ...) as fields.
   */
  temporalLogger(): TemporalLogger {
    const log = this.root.child({ component: 'temporal' });
    const write = (level: TemporalLogLevel, message: string, meta?: LogMetadata) => {
      const fields = plain(meta);
      switch (level) {
        case 'TRACE':
        case 'DEBUG':
          return log.debug(fields, message);
        case 'INFO':
          return log.info(fields, message);
        case 'WARN':
          return log.warn(fields, message);
        default:
          return log.error(fields, message);
      }
    };
    return {
      log: write,
      trace: (message, meta) => write('TRACE', message, meta),
      debug: (message, meta) => write('DEBUG', message, meta),
      info: (message, meta) => write('INFO', message, meta),
      warn: (message, meta) => write('WARN', message, meta),
      error: (message, meta) => write('ERROR', message, meta),
    };
  }
}

/** The Temporal SDK's name of a level. */
export const temporalLogLevel = (level: LogLevel): TemporalLogLevel =>
  level.toUpperCase() as TemporalLogLevel;

/**
 * Fields as plain JSON values: an Error becomes its message (and its stack as `stack` when it is
 * the `error` field), keys that are symbols (the SDK's timestamp) are left out.
 */
function plain(fields: Record<string | symbol, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!fields) return out;
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    if (value instanceof Error) {
      out[key] = value.message;
      if (key === 'error' && value.stack && !('stack' in fields)) out.stack = value.stack;
    } else out[key] = value;
  }
  return out;
}

/** One JSON object a line on stdout, from `level` up, each with the time and the component. */
export function jsonLogger(component: string, level: LogLevel = 'info'): Logger {
  return new JsonLog(level).logger(component);
}
