/**
 * One rendering API for the templates of an SFPlan. `gotemplate` runs Go's own text/template with
 * sprig and the inter-operator's functions, and `jsonnet` runs go-jsonnet, both compiled to one
 * WebAssembly module; `mustache` runs the mustache package; all in a small pool of worker threads,
 * with time, size and memory limits. `helm` renders the chart at the template's `url` with Helm's
 * own engine, compiled to WebAssembly too, in a pool of its own with the same limits, started by the
 * first helm render. No Kubernetes or Temporal here: activities and the render command call it
 * (and give the cluster's capabilities).
 *
 * See docs/templates.md.
 */
import { parse } from 'yaml';
import type { KubeObject, PlanTemplate, SFPlan, TemplateAction } from '../resources/types.js';
import { invalidYaml, objectsOf, splitDocuments } from './documents.js';
import { TemplateError } from './errors.js';
import {
  builtWasmFile,
  DEFAULT_LIMITS,
  RenderPool,
  type ReadAs,
  type RendererLimits,
  type RenderLimits,
} from './gotemplate/pool.js';
import { CHART_LIMITS, checkGzip, fetchChart, type ChartLimits } from './helm/chart.js';
import { releaseOf, type ClusterCapabilities, type HelmRelease } from './helm/release.js';
import { templateText, URL_LIMITS, type UrlLimits } from './source.js';

export { renderDashboardUrl } from './dashboard-url.js';
export { objectsOf, splitDocuments } from './documents.js';
export { TemplateError, type TemplateErrorReason } from './errors.js';
export { DEFAULT_LIMITS, type RendererLimits, type RenderLimits } from './gotemplate/pool.js';
export { clearTemplateCache, templateText, URL_LIMITS, type UrlLimits } from './source.js';
export { CHART_LIMITS, clearChartCache, type ChartLimits } from './helm/chart.js';
export { releaseName, type ClusterCapabilities, type HelmRelease } from './helm/release.js';

/**
 * What templates see: the records (`instance`, `binding`), the catalog entries (`plan`, `service`)
 * and the source objects fetched for the `sources` template, by their key. It travels as JSON
 * text, written when the render starts, so it must be JSON data and must not change until the
 * render settles; numbers are typed as in the original (docs/templates.md).
 */
export interface RenderData {
  readonly instance?: unknown;
  readonly binding?: unknown;
  readonly plan?: unknown;
  readonly service?: unknown;
  readonly [source: string]: unknown;
}

/** Options of one render. */
export interface RenderOptions extends RenderLimits {
  /** Limits of a template fetched from its `url`. @default URL_LIMITS */
  readonly url?: Partial<UrlLimits>;
  /** Limits of a helm template's chart fetched from its `url`. @default CHART_LIMITS */
  readonly chartLimits?: Partial<ChartLimits>;
  /** A helm template's chart archive (a `.tgz`), in place of fetching its `url`. @default fetched */
  readonly chart?: Uint8Array;
  /**
   * A helm template's release. @default `in-<adler32 of the record name>` in the instance's
   * namespace, from the data (`binding`, else `instance`)
   */
  readonly release?: HelmRelease;
  /** The target cluster's version and API versions, as a helm chart sees them. @default Helm's own */
  readonly capabilities?: ClusterCapabilities;
}

/** The actions a `helm` template may serve, as in the original. */
export const HELM_ACTIONS: ReadonlySet<string> = new Set(['provision', 'bind']);

/** The plan's template for an action, if it has one. */
export function findTemplate(plan: SFPlan, action: TemplateAction): PlanTemplate | undefined {
  return plan.spec.templates?.find((t) => t.action === action);
}

// ------------------------------------------------------------------ the render threads

/** The renderer's settings: the limits of its threads, and where its WebAssembly builds are. */
export interface RendererSettings extends RendererLimits {
  /** The WebAssembly build of Helm's engine, beside `wasm_exec.js`. @default dist/wasm/helm.wasm */
  readonly helmWasmFile: string;
  /** Limits of charts fetched from a helm template's `url`. @default CHART_LIMITS */
  readonly chart: ChartLimits;
}

let pool: RenderPool | undefined;
let helmPool: RenderPool | undefined;
let settings: RendererSettings = {
  ...DEFAULT_LIMITS,
  helmWasmFile: builtWasmFile('helm.wasm'),
  chart: CHART_LIMITS,
};
const threads = (): RenderPool => (pool ??= new RenderPool(settings));
// Helm's engine is a large module: its threads start only when a helm template renders.
const helmThreads = (): RenderPool =>
  (helmPool ??= new RenderPool({ ...settings, wasmFile: settings.helmWasmFile }));

/**
 * Sets the renderer's limits (pool size, time, sizes, memory, charts) and builds, at start-up: it
 * stops the render threads as {@link closeRenderer} does, and the next render starts threads with
 * the new limits.
 */
export async function configureRenderer(
  changes: Partial<Omit<RendererSettings, 'chart'>> & { readonly chart?: Partial<ChartLimits> },
): Promise<void> {
  settings = { ...settings, ...changes, chart: { ...settings.chart, ...changes.chart } };
  await closeRenderer();
}

/**
 * Stops the render threads, failing renders still queued or running. Idle threads never keep the
 * process alive, so calling this is optional; the next render starts threads again.
 */
export async function closeRenderer(): Promise<void> {
  const old = [pool, helmPool];
  pool = undefined;
  helmPool = undefined;
  await Promise.all(old.map((p) => p?.close()));
}

// ------------------------------------------------------------------ engines

/**
 * Renders one template over the data; `name` is what errors call the template (the action). With
 * `read`, the result is the values of the output's YAML documents as a JSON array (see readDocuments).
 */
type Engine = (
  template: PlanTemplate,
  name: string,
  data: RenderData,
  options: RenderOptions,
  read: ReadAs | undefined,
) => Promise<string>;

const inThreads =
  (engine: 'gotemplate' | 'jsonnet' | 'mustache'): Engine =>
  (template, name, data, options, read) => {
    // Inline content goes straight to the pool: a burst of renders costs the caller little.
    if (template.content) return threads().render(engine, name, template.content, data, options, read);
    return templateText(template, { ...URL_LIMITS, ...options.url }).then((text) =>
      threads().render(engine, name, text, data, options, read),
    );
  };

/**
 * A helm template: its `content` (or `contentEncoded`) is a gotemplate over the data whose YAML
 * output is the values, merged over the chart's `values.yaml`; the chart at its `url` renders with
 * them, as Helm installs revision 1 of the release, and the output is every manifest of the chart,
 * its subcharts and their `crds/`, in the order of their file names.
 */
async function renderHelm(
  template: PlanTemplate,
  name: string,
  data: RenderData,
  options: RenderOptions,
  read: ReadAs | undefined,
): Promise<string> {
  if (!HELM_ACTIONS.has(name)) {
    throw new TemplateError(
      `the ${name} template is of type helm, which only provision and bind templates may be`,
      'unsupported',
    );
  }
  const release = options.release ?? releaseOf(data);
  if (!release) {
    throw new TemplateError(
      `the ${name} template is of type helm: its release needs the record's name and the instance's namespace (metadata of instance and binding in the data)`,
      'source',
    );
  }
  let chart: Uint8Array;
  if (options.chart) {
    checkGzip(options.chart, 'the chart');
    chart = options.chart;
  } else if (template.url) {
    chart = (await fetchChart(template.url, { ...settings.chart, ...options.chartLimits })).bytes;
  } else {
    throw new TemplateError(`the ${name} template is of type helm and has no url (its chart)`, 'source');
  }
  const { url: _chart, ...valuesTemplate } = template;
  const valuesText = await templateText({ ...valuesTemplate, content: template.content ?? '' });
  const values = valuesText ? await threads().render('gotemplate', name, valuesText, data, options) : '';
  const archive = Buffer.from(chart.buffer, chart.byteOffset, chart.byteLength).toString('base64');
  const request = {
    values,
    release: release.name,
    namespace: release.namespace,
    ...(options.capabilities
      ? {
          kubeVersion: options.capabilities.kubeVersion,
          kubeMajor: options.capabilities.major ?? '',
          kubeMinor: options.capabilities.minor ?? '',
          apiVersions: options.capabilities.apiVersions,
        }
      : {}),
  };
  const maxInputBytes = archive.length + (options.maxInputBytes ?? settings.maxInputBytes);
  const text = await helmThreads().render('helm', name, archive, request, { ...options, maxInputBytes });
  if (!read) return text;
  const docs = splitDocuments(text);
  if (read === 'value' && docs.length > 1)
    throw invalidYaml(name, `expected one document, found ${docs.length}`);
  return JSON.stringify(await readDocuments(docs, name));
}

/** The engines by template type (lower case: the original accepts `GoTemplate`, `HELM`, ...). */
const ENGINES: Readonly<Record<string, Engine>> = {
  gotemplate: inThreads('gotemplate'),
  jsonnet: inThreads('jsonnet'),
  mustache: inThreads('mustache'),
  helm: renderHelm,
};

/**
 * Renders a plan's template for an action and returns its text, byte for byte as the engine wrote
 * it. Fails with a {@link TemplateError}.
 */
export function renderTemplate(
  template: PlanTemplate,
  action: TemplateAction,
  data: RenderData,
  options: RenderOptions = {},
): Promise<string> {
  return render(template, action, data, options, undefined);
}

/** The values of the YAML documents a template renders, read in the render thread (one trip). */
async function renderDocuments(
  template: PlanTemplate,
  action: TemplateAction,
  data: RenderData,
  options: RenderOptions = {},
  read: ReadAs = 'documents',
): Promise<unknown[]> {
  return JSON.parse(await render(template, action, data, options, read)) as unknown[];
}

function render(
  template: PlanTemplate,
  action: TemplateAction,
  data: RenderData,
  options: RenderOptions,
  read: ReadAs | undefined,
): Promise<string> {
  const type = String(template.type ?? '').toLowerCase();
  const engine = Object.hasOwn(ENGINES, type) ? ENGINES[type] : undefined;
  if (!engine) {
    return Promise.reject(
      new TemplateError(`unknown template type ${JSON.stringify(template.type)}`, 'unsupported'),
    );
  }
  try {
    return engine(template, action, data, options, read);
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new TemplateError(String(err)));
  }
}

// ------------------------------------------------------------------ what renders describe

/**
 * The values of YAML documents, read as the original read rendered templates: by Go's yaml.v2
 * (in the render threads), so `yes`/`on`/`y` are booleans, `0777` is octal and a timestamp stays
 * a string, whatever engine wrote the text. Keys such as `__proto__` stay plain data.
 */
async function readDocuments(docs: readonly string[], action: string): Promise<unknown[]> {
  if (docs.length === 0) return [];
  let json: string;
  try {
    json = await threads().render('documents', action, JSON.stringify(docs), null);
  } catch (err) {
    if (err instanceof TemplateError && err.reason === 'template') throw invalidYaml(action, err.message);
    throw err;
  }
  return JSON.parse(json) as unknown[];
}

/**
 * The Kubernetes objects a rendered `provision`, `bind` or `unbind` template describes, in order:
 * multi-document YAML split on `---` lines, empty and `null` documents dropped.
 */
export async function parseObjects(text: string, action: string): Promise<KubeObject[]> {
  return objectsOf(await readDocuments(splitDocuments(text), action), action);
}

/** The value a rendered `status`, `sources` or `clusterSelector` template describes; `{}` when empty. */
export async function parseValues(text: string, action: string): Promise<unknown> {
  const docs = splitDocuments(text);
  if (docs.length > 1) throw invalidYaml(action, `expected one document, found ${docs.length}`);
  const [value] = await readDocuments(docs, action);
  return value ?? {};
}

/**
 * Renders a `provision`, `bind` or `unbind` template and returns the Kubernetes objects it
 * describes (multi-document YAML split on `---` lines, empty documents dropped; for jsonnet, the
 * object or the list of objects it evaluates to, `null` items dropped).
 */
export async function renderObjects(
  template: PlanTemplate,
  action: TemplateAction,
  data: RenderData,
  options?: RenderOptions,
): Promise<KubeObject[]> {
  return objectsOf(await renderDocuments(template, action, data, options), action);
}

/**
 * Renders a `status`, `sources` or `clusterSelector` template and returns the value its YAML
 * describes (for jsonnet, the value it evaluates to), as plain data (`{}` when empty or `null`).
 */
export async function renderValues(
  template: PlanTemplate,
  action: TemplateAction,
  data: RenderData,
  options?: RenderOptions,
): Promise<unknown> {
  const [value] = await renderDocuments(template, action, data, options, 'value');
  return value ?? {};
}

/**
 * Reads the data file of the render command: one JSON or YAML document holding an object whose
 * keys are `instance`, `plan`, `service`, `binding` and source objects.
 */
export function parseDataFile(text: string): RenderData {
  let data: unknown;
  try {
    data = parse(text, { maxAliasCount: 100 }) as unknown;
  } catch (err) {
    throw new TemplateError(`the data file is not JSON or YAML: ${(err as Error).message}`, 'source');
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new TemplateError(
      'the data file must hold an object (keys instance, plan, service, binding, ...)',
      'source',
    );
  }
  return data as RenderData;
}
