/** One-line JSON logs on stdout. Never pass secrets: fields are written as they are. */
import type { Logger } from './api/middleware.js';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;

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
