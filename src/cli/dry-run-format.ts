/**
 * What `plan dry-run` reads and prints: the new spec from a file (a whole SFPlan or its spec, YAML
 * or JSON), and a dry run's report as a readable diff per instance. Pure: strings in, strings out.
 */
import { parse } from 'yaml';
import type { FieldChange, InstanceDryRun, ObjectChange, PlanDryRunReport } from '../admin/dry-run.js';

/**
 * The plan spec a file holds: the `spec` of an SFPlan (a document with `kind: SFPlan`), or the
 * document itself when it is a spec.
 *
 * @throws Error when the text is not YAML or JSON, or holds no object.
 */
export function planSpecOf(text: string): Record<string, unknown> {
  let document: unknown;
  try {
    document = parse(text, { maxAliasCount: 100 }) as unknown;
  } catch (err) {
    throw new Error(`the spec file is not YAML or JSON: ${(err as Error).message}`);
  }
  if (!isObject(document)) throw new Error('the spec file must hold an SFPlan or its spec (an object)');
  if (document.kind === 'SFPlan') {
    if (!isObject(document.spec)) throw new Error('the SFPlan in the spec file has no spec');
    return document.spec;
  }
  return document;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** A value on one line: JSON, so that strings show their quotes and control characters escaped. */
const shown = (value: unknown): string => JSON.stringify(value) ?? String(value);

/** One field: `~ path: old → new`, `+ path: new`, `- path: old`, or `~ path: (redacted)`. */
export function fieldLine(field: FieldChange): string {
  if (field.redacted) return `~ ${field.path}: (value redacted)`;
  if (!('old' in field)) return `+ ${field.path}: ${shown(field.new)}`;
  if (!('new' in field)) return `- ${field.path}: ${shown(field.old)}`;
  return `~ ${field.path}: ${shown(field.old)} → ${shown(field.new)}`;
}

const MARKS: Readonly<Record<ObjectChange['change'], string>> = {
  added: '+',
  changed: '~',
  unchanged: '=',
  removed: '-',
};

const objectName = (o: ObjectChange) => `${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}`;

/** One instance: a heading, then each object that would change (with its fields) and the count of the others. */
export function instanceText(instance: InstanceDryRun, revision: string): string {
  const where = [
    instance.clusterId ? `cluster ${instance.clusterId}` : undefined,
    instance.revision ? `revision ${instance.revision} → ${revision}` : undefined,
  ].filter(Boolean);
  const heading = `instance ${instance.instanceId}${where.length ? ` (${where.join(', ')})` : ''}`;
  if (instance.error !== undefined) return `${heading}: FAILED: ${instance.error}\n`;
  const moving = instance.objects.filter((o) => o.change !== 'unchanged');
  const unchanged = instance.objects.length - moving.length;
  const counted = `${unchanged} object${unchanged === 1 ? '' : 's'} unchanged`;
  if (moving.length === 0) return `${heading}: no change (${counted})\n`;
  const lines = [`${heading}:`];
  for (const o of moving) {
    lines.push(`  ${MARKS[o.change]} ${objectName(o)}${o.change === 'changed' ? '' : ` (${o.change})`}`);
    for (const field of o.fields ?? []) lines.push(`      ${fieldLine(field)}`);
  }
  if (unchanged > 0) lines.push(`  = ${counted}`);
  return `${lines.join('\n')}\n`;
}

/** Every instance of one page of a report. */
export const reportText = (report: PlanDryRunReport): string =>
  report.instances.map((i) => instanceText(i, report.revision)).join('');

/** The closing line over every page: how many instances would change, stay, or failed. */
export function summaryLine(
  planId: string,
  revision: string,
  summary: PlanDryRunReport['summary'],
  currentRevision?: string,
): string {
  const total = summary.changed + summary.unchanged + summary.failed;
  return (
    `plan ${planId}: revision ${currentRevision ?? '(none)'} → ${revision}; ${total} instance${total === 1 ? '' : 's'}: ` +
    `${summary.changed} would change, ${summary.unchanged} unchanged, ${summary.failed} failed; nothing was applied\n`
  );
}
