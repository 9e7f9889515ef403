/**
 * What rendered templates describe: Kubernetes objects (multi-document YAML) or one value (the
 * `status`, `sources` and `clusterSelector` templates). The YAML itself is read by Go's yaml.v2 in
 * the render threads, as the original read it (index.ts); here are the pure parts: splitting the
 * documents and checking what they hold.
 */
import type { KubeObject } from '../resources/types.js';
import { TemplateError } from './errors.js';

/**
 * Splits multi-document YAML as Kubernetes' YAML reader does: on lines that are `---`, alone or
 * followed by spaces or a comment. Documents that hold nothing but blanks and comments are dropped.
 */
export function splitDocuments(text: string): string[] {
  return text
    .split(/^---[ \t]*(?:#.*)?\r?$/m)
    .filter((doc) => doc.replace(/^[ \t]*#.*$/gm, '').trim() !== '');
}

/** The error of a template whose output is not YAML. */
export const invalidYaml = (action: string, message: string): TemplateError =>
  new TemplateError(`the ${action} template rendered invalid YAML: ${message}`, 'template');

/**
 * What a value is, for an error message, never the value itself: rendered text can hold what the
 * template read (credentials in a bind's status), and errors go to the platform, the records and
 * Temporal's history.
 */
function kindOf(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'string' ? `a string of ${value.length} characters` : `a ${typeof value}`;
}

/**
 * The Kubernetes objects among the values of a rendered `provision`, `bind` or `unbind` template's
 * documents, in order. Empty documents (and documents that are only `null`) are dropped; anything
 * else must be an object with `apiVersion`, `kind` and `metadata.name`.
 */
export function objectsOf(values: readonly unknown[], action: string): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const [i, value] of values.entries()) {
    if (value === null || value === undefined) continue;
    if (typeof value !== 'object' || Array.isArray(value)) {
      throw new TemplateError(
        `the ${action} template's document ${i + 1} is ${kindOf(value)}, not a Kubernetes object`,
        'template',
      );
    }
    const { apiVersion, kind, metadata } = value as Partial<KubeObject>;
    if (typeof apiVersion !== 'string' || typeof kind !== 'string' || typeof metadata?.name !== 'string') {
      throw new TemplateError(
        `the ${action} template's document ${i + 1} is not a Kubernetes object: it needs apiVersion, kind and metadata.name`,
        'template',
      );
    }
    objects.push(value as KubeObject);
  }
  return objects;
}
