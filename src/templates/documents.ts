/**
 * What rendered templates describe: Kubernetes objects (multi-document YAML) or one value (the
 * `status`, `sources` and `clusterSelector` templates). Parsed with the `yaml` package into plain
 * objects; a `__proto__` key stays an own data property.
 */
import { parse, type ParseOptions, type SchemaOptions, type ToJSOptions } from 'yaml';
import type { KubeObject } from '../resources/types.js';
import { TemplateError } from './errors.js';

/**
 * As the original's YAML library (yaml.v2) reads them: duplicate keys allowed (the last wins) and
 * `<<` merge keys; aliases are bounded.
 */
const YAML_OPTIONS: ParseOptions & SchemaOptions & ToJSOptions = {
  uniqueKeys: false,
  merge: true,
  maxAliasCount: 100,
};

/**
 * Splits multi-document YAML as Kubernetes' YAML reader does: on lines that are `---`, alone or
 * followed by spaces or a comment. Documents that hold nothing but blanks and comments are dropped.
 */
export function splitDocuments(text: string): string[] {
  return text
    .split(/^---[ \t]*(?:#.*)?\r?$/m)
    .filter((doc) => doc.replace(/^[ \t]*#.*$/gm, '').trim() !== '');
}

/** Parses one YAML document; invalid YAML is a template error that says which template wrote it. */
export function parseDocument(doc: string, action: string): unknown {
  try {
    return parse(doc, YAML_OPTIONS) as unknown;
  } catch (err) {
    throw new TemplateError(
      `the ${action} template rendered invalid YAML: ${(err as Error).message}`,
      'template',
    );
  }
}

function kindOf(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'string' ? `the string ${JSON.stringify(value.slice(0, 40))}` : `a ${typeof value}`;
}

/**
 * The Kubernetes objects of a rendered `provision`, `bind` or `unbind` template, in order. Empty
 * documents (and documents that are only `null`) are dropped; anything else must be an object with
 * `apiVersion`, `kind` and `metadata.name`.
 */
export function parseObjects(text: string, action: string): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const [i, doc] of splitDocuments(text).entries()) {
    const value = parseDocument(doc, action);
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

/** The value of a rendered `status`, `sources` or `clusterSelector` template; `{}` when it is empty. */
export function parseValues(text: string, action: string): unknown {
  return parseDocument(text, action) ?? {};
}
