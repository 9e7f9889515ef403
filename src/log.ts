/** Where the processes write what happened: the logger type, and one-line JSON logs on stdout. */

/** Where a component writes what happened. Fields are written as they are: never pass secrets. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A logger that drops everything. */
export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;

/** One JSON object a line on stdout, from `level` up, each with the time and the component. */
export function jsonLogger(component: string, level: keyof typeof LEVELS = 'info'): Logger {
  const min = LEVELS[level] ?? LEVELS.info;
  const write = (lvl: keyof typeof LEVELS) => (message: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < min) return;
    process.stdout.write(
      `${JSON.stringify({ time: new Date().toISOString(), level: lvl, component, message, ...fields })}\n`,
    );
  };
  return { info: write('info'), warn: write('warn'), error: write('error') };
}
