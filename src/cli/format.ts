/**
 * What the command line prints: tables of records, a rollout's progress as a bar or a line, and the
 * exit status a rollout's end means. Pure: strings in, strings out.
 */
import type { AdoptionItem, AdoptionReport, RolloutProgress, RolloutState } from '../admin/contract.js';
import type { BindingSummary, InstanceSummary } from '../admin/service.js';

/** Columns of a table: a header and how to read a row's cell. */
export type Columns<T> = readonly (readonly [header: string, cell: (row: T) => string | undefined])[];

/**
 * A table as `kubectl get` prints one: a header line, then one line a row, columns left-aligned
 * and three spaces apart, an empty cell as `-`, no trailing spaces.
 */
export function table<T>(rows: readonly T[], columns: Columns<T>): string {
  const cells = [
    columns.map(([header]) => header),
    ...rows.map((row) => columns.map(([, cell]) => oneLine(cell(row)) || '-')),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  return cells
    .map((line) =>
      line
        .map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join('   ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** A cell on one line: control characters (newlines in a description) become spaces. */
const oneLine = (text: string | undefined): string =>
  [...(text ?? '')].map((c) => (c < ' ' || c === '\u007f' ? ' ' : c)).join('');

const deleting = (r: { deletionRequestedAt?: string }) => (r.deletionRequestedAt ? 'deleting' : undefined);

export const INSTANCE_COLUMNS: Columns<InstanceSummary> = [
  ['INSTANCE', (r) => r.instanceId],
  ['SERVICE', (r) => r.serviceId],
  ['PLAN', (r) => r.planId],
  ['CLUSTER', (r) => r.clusterId],
  ['STATE', (r) => r.state],
  ['OPERATION', (r) => r.operation],
  ['REVISION', (r) => r.revision],
  ['DELETION', deleting],
];

export const BINDING_COLUMNS: Columns<BindingSummary> = [
  ['BINDING', (r) => r.bindingId],
  ['INSTANCE', (r) => r.instanceId],
  ['SERVICE', (r) => r.serviceId],
  ['PLAN', (r) => r.planId],
  ['CLUSTER', (r) => r.clusterId],
  ['STATE', (r) => r.state],
  ['OPERATION', (r) => r.operation],
  ['DELETION', deleting],
];

/** Where a rollout stands, in words: `wave 2, waves: 7/10 done, 1 failed, 2 in flight`. */
export function progressSummary(p: RolloutProgress): string {
  const stage = p.wave === 0 ? 'canary batch' : `wave ${p.wave}`;
  const unmovable = p.unmovable ? `, ${p.unmovable} unmovable` : '';
  return `${p.state} (${stage}): ${p.done}/${p.total} done, ${p.failed} failed${unmovable}, ${p.inFlight} in flight`;
}

/**
 * A progress bar of `width` cells: `#` done, `!` failed, `>` in flight, `.` waiting, then the
 * summary. Each part's cells are rounded down, so a bar is full only when all are settled.
 */
export function progressBar(p: RolloutProgress, width = 30): string {
  const cells = (n: number) => (p.total > 0 ? Math.floor((n / p.total) * width) : 0);
  const done = cells(p.done);
  const failed = Math.min(cells(p.failed), width - done);
  const inFlight = Math.min(cells(p.inFlight), width - done - failed);
  const bar = '#'.repeat(done) + '!'.repeat(failed) + '>'.repeat(inFlight);
  return `[${bar.padEnd(width, '.')}] ${progressSummary(p)}`;
}

/** The states a rollout ends in: nothing more happens unless an admin starts it again. */
export const FINAL_STATES: ReadonlySet<RolloutState> = new Set(['done', 'halted', 'aborted', 'blocked']);

/**
 * The exit status of `rollout watch` once the rollout ended: 0 when done with no instance failed,
 * 1 when it halted, was aborted, or finished with failed instances (a drain: blocked).
 */
export const exitStatusOf = (p: RolloutProgress): 0 | 1 => (p.state === 'done' && p.failed === 0 ? 0 : 1);

const ADOPTION_COLUMNS: Columns<AdoptionItem> = [
  ['KIND', (r) => r.kind],
  ['INSTANCE', (r) => r.instanceId],
  ['BINDING', (r) => r.bindingId],
  ['RECORD', (r) => `${r.namespace}/${r.name}`],
  ['STATE', (r) => r.state],
  ['REASON', (r) => r.reason],
];

/**
 * An adoption's report: the records adopted (or, in a dry run, adoptable), those that cannot be
 * with the reason, and a summary line.
 */
export function adoptionText(report: AdoptionReport): string {
  const done = report.dryRun ? 'adoptable' : 'adopted';
  const parts = [];
  if (report.adopted.length > 0)
    parts.push(`${done}:\n${table(report.adopted, ADOPTION_COLUMNS.slice(0, 5))}`);
  if (report.refused.length > 0) parts.push(`not adoptable:\n${table(report.refused, ADOPTION_COLUMNS)}`);
  const count = (kind: AdoptionItem['kind'], items: readonly AdoptionItem[]) =>
    items.filter((i) => i.kind === kind).length;
  const summary =
    `${count('instance', report.adopted)} instances and ${count('binding', report.adopted)} bindings ${done}, ` +
    `${report.refused.length} not adoptable, ${report.alreadyAdopted} adopted before or made here` +
    (report.dryRun ? ' (dry run: nothing was changed)' : '');
  return [...parts, `${summary}\n`].join('\n');
}
