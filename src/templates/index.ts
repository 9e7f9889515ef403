/**
 * One rendering API for the templates of an SFPlan: gotemplate (Go's own text/template + sprig,
 * compiled to WebAssembly and run in worker threads), mustache, and room for helm. No Kubernetes
 * or Temporal here: activities and the render command call it.
 */
import Mustache from 'mustache';
import { parse, parseAllDocuments } from 'yaml';
import type { KubeObject, PlanTemplate, SFPlan, TemplateAction, TemplateType } from '../resources/types.js';
import { TemplateError } from './errors.js';
import { DEFAULT_LIMITS, RenderPool, type PoolLimits } from './gotemplate/pool.js';

export { TemplateError, type TemplateErrorReason } from './errors.js';
export { DEFAULT_LIMITS, type PoolLimits } from './gotemplate/pool.js';

/** What templates see: the records, the plan and service, and the fetched source objects by name. */
export interface RenderData {
  readonly instance?: unknown;
  readonly binding?: unknown;
  readonly plan?: unknown;
  readonly service?: unknown;
  readonly [source: string]: unknown;
}

/** The plan's template for an action, if it has one. */
export function findTemplate(plan: SFPlan, action: TemplateAction): PlanTemplate | undefined {
  return plan.spec.templates.find((t) => t.action === action);
}

// ------------------------------------------------------------------ template text

/** Templates fetched from a `url`: at most this big, this slow, and kept this long. */
const URL_LIMITS = { maxBytes: 1024 * 1024, timeoutMs: 10_000, ttlMs: 5 * 60_000 };
const urlCache = new Map<string, { text: string; expires: number }>();

async function fetchTemplate(url: string): Promise<string> {
  const cached = urlCache.get(url);
  if (cached && cached.expires > Date.now()) return cached.text;
  if (!/^https?:\/\//i.test(url)) throw new TemplateError(`template url ${url} is not http(s)`, 'source');
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(URL_LIMITS.timeoutMs), redirect: 'follow' });
  } catch (err) {
    throw new TemplateError(`fetching template ${url} failed: ${(err as Error).message}`, 'source');
  }
  if (!response.ok)
    throw new TemplateError(`fetching template ${url} failed: HTTP ${response.status}`, 'source');
  const length = Number(response.headers.get('content-length') ?? 0);
  if (length > URL_LIMITS.maxBytes)
    throw new TemplateError(`template ${url} is over ${URL_LIMITS.maxBytes} bytes`, 'source');
  const reader = response.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const chunk = reader ? await reader.read() : { done: true as const, value: undefined };
    if (chunk.done) break;
    size += chunk.value.byteLength;
    if (size > URL_LIMITS.maxBytes) {
      await reader?.cancel();
      throw new TemplateError(`template ${url} is over ${URL_LIMITS.maxBytes} bytes`, 'source');
    }
    chunks.push(chunk.value);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  urlCache.set(url, { text, expires: Date.now() + URL_LIMITS.ttlMs });
  return text;
}

/** The template's text, from `content`, base64 `contentEncoded` or `url`. */
export async function templateText(template: PlanTemplate): Promise<string> {
  if (template.content !== undefined) return template.content;
  if (template.contentEncoded !== undefined)
    return Buffer.from(template.contentEncoded, 'base64').toString('utf8');
  if (template.url !== undefined) return fetchTemplate(template.url);
  throw new TemplateError(`the ${template.action} template has no content, contentEncoded or url`, 'source');
}

// ------------------------------------------------------------------ engines

type Engine = (name: string, text: string, data: RenderData) => Promise<string>;

let pool: RenderPool | undefined;
let poolLimits: PoolLimits = DEFAULT_LIMITS;

/** Sets the gotemplate limits (before the first render, or the pool restarts with them). */
export async function configureRenderer(limits: Partial<PoolLimits>): Promise<void> {
  poolLimits = { ...poolLimits, ...limits };
  const old = pool;
  pool = undefined;
  await old?.close();
}

/** Stops the render threads (at shutdown; the next render starts them again). */
export async function closeRenderer(): Promise<void> {
  const old = pool;
  pool = undefined;
  await old?.close();
}

/**
 * Mustache has no functions, so it cannot decode a Secret's base64 `data`: for mustache, every
 * Secret among the sources also shows its data decoded under `stringData` (as Kubernetes accepts
 * it on writes).
 */
function withDecodedSecrets(data: RenderData): RenderData {
  const view: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) {
    const secret = value as { kind?: unknown; data?: unknown } | null;
    const decoded =
      secret &&
      typeof secret === 'object' &&
      secret.kind === 'Secret' &&
      secret.data &&
      typeof secret.data === 'object'
        ? {
            ...secret,
            stringData: Object.fromEntries(
              Object.entries(secret.data as Record<string, string>).map(([k, v]) => [
                k,
                Buffer.from(String(v), 'base64').toString('utf8'),
              ]),
            ),
          }
        : value;
    Object.defineProperty(view, key, { value: decoded, enumerable: true });
  }
  return view;
}

const engines: Record<TemplateType, Engine> = {
  gotemplate: (name, text, data) => {
    pool ??= new RenderPool(poolLimits);
    // JSON text end to end: keys like __proto__ stay data and never touch a JavaScript prototype.
    return pool.render(name, text, JSON.stringify(data));
  },
  mustache: async (name, text, data) => {
    try {
      return Mustache.render(
        text,
        withDecodedSecrets(data),
        {},
        { escape: (value: unknown) => String(value) },
      );
    } catch (err) {
      throw new TemplateError(`mustache: ${name}: ${(err as Error).message}`, 'template');
    }
  },
  helm: () =>
    Promise.reject(new TemplateError('templates of type helm are not supported yet', 'unsupported')),
};

/** Renders a template of a plan for an action; returns the text. */
export async function renderTemplate(
  template: PlanTemplate,
  action: TemplateAction,
  data: RenderData,
): Promise<string> {
  const engine = engines[template.type];
  if (!engine) throw new TemplateError(`unknown template type ${String(template.type)}`, 'unsupported');
  return engine(action, await templateText(template), data);
}

// ------------------------------------------------------------------ output

/** Splits multi-document YAML on `---` lines, as the original inter-operator does; empty documents are dropped. */
export function splitDocuments(text: string): string[] {
  return text
    .split(/^---[ \t]*(?:#.*)?$/m)
    .map((doc) => doc)
    .filter((doc) => doc.replace(/^\s*#.*$/gm, '').trim() !== '');
}

function parseYaml(doc: string, action: string): unknown {
  try {
    return parse(doc, { maxAliasCount: 100 });
  } catch (err) {
    throw new TemplateError(
      `the ${action} template rendered invalid YAML: ${(err as Error).message}`,
      'template',
    );
  }
}

/** Renders a template and returns the Kubernetes objects it describes. */
export async function renderObjects(
  template: PlanTemplate,
  action: TemplateAction,
  data: RenderData,
): Promise<KubeObject[]> {
  const text = await renderTemplate(template, action, data);
  return splitDocuments(text).map((doc, i) => {
    const obj = parseYaml(doc, action);
    if (!obj || typeof obj !== 'object' || Array.isArray(obj)) {
      throw new TemplateError(
        `the ${action} template's document ${i + 1} is not a Kubernetes object`,
        'template',
      );
    }
    const { apiVersion, kind, metadata } = obj as Partial<KubeObject>;
    if (typeof apiVersion !== 'string' || typeof kind !== 'string' || typeof metadata?.name !== 'string') {
      throw new TemplateError(
        `the ${action} template's document ${i + 1} lacks apiVersion, kind or metadata.name`,
        'template',
      );
    }
    return obj as KubeObject;
  });
}

/** Renders a template (status, sources, clusterSelector) and returns the value its YAML describes. */
export async function renderValues(
  template: PlanTemplate,
  action: TemplateAction,
  data: RenderData,
): Promise<unknown> {
  return parseYaml(await renderTemplate(template, action, data), action) ?? {};
}

/** Same as parseAllDocuments, exported for the render command's data files. */
export const parseDataFile = (text: string): unknown => {
  const docs = parseAllDocuments(text);
  if (docs.length !== 1)
    throw new TemplateError('the data file must hold exactly one YAML or JSON document', 'source');
  return docs[0]!.toJS();
};
