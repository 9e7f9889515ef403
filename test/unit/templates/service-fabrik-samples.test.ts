/**
 * Service Fabrik's own sample plans render here as Service Fabrik's inter-operator renders them.
 *
 * GIVEN each sample of test/fixtures/service-fabrik/templates (its plan, the records, and the
 * objects in the instance's namespace) and what Service Fabrik's own code rendered of it
 * (`expected/`, written by tools/service-fabrik-render; the README says how)
 * WHEN its templates render here over the data the workers give them (the records, and the
 * objects the sources template names, read as the workers read them)
 * THEN the text of every gotemplate is the same byte for byte; the objects to apply are the same
 * objects Service Fabrik applies (its rendered documents read as YAML, with the instance's
 * namespace set); the status says the same state of every operation; and what fails there fails
 * here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { parse, parseAllDocuments } from 'yaml';
import { ANNOTATIONS } from '../../../src/resources/names.js';
import { generatedTemplateData } from '../../../src/resources/sfsecret.js';
import type { KubeObject, PlanTemplate, SFPlan, TemplateAction } from '../../../src/resources/types.js';
import {
  closeRenderer,
  findTemplate,
  renderObjects,
  renderTemplate,
  renderValues,
  type RenderData,
  type RenderOptions,
} from '../../../src/templates/index.js';
import {
  forTemplate,
  readStatusSection,
  sourceReferences,
  withSources,
} from '../../../src/templates/values.js';

const ROOT = new URL('../../fixtures/service-fabrik/templates/', import.meta.url);

interface SampleTemplate {
  readonly action: string;
  readonly type: string;
  readonly file?: string;
  readonly chart?: string;
}

interface Sample {
  readonly name: string;
  readonly plan: SFPlan;
  readonly instance: KubeObject;
  readonly binding: KubeObject;
  readonly service: KubeObject;
  readonly cluster: KubeObject[];
  readonly chart?: Uint8Array;
  readonly expected: ReadonlyMap<string, string>;
}

const read = (dir: URL, file: string): string => readFileSync(new URL(file, dir), 'utf8');

const adopted = (record: KubeObject): KubeObject => ({
  ...record,
  metadata: {
    ...record.metadata,
    annotations: { ...record.metadata.annotations, [ANNOTATIONS.adoptedFromServiceFabrik]: '{}' },
  },
});

function loadSample(name: string): Sample {
  const dir = new URL(`${name}/`, ROOT);
  const spec = parse(read(dir, 'sample.yaml')) as Record<string, string> & {
    templates: SampleTemplate[];
  };
  const plan = parse(read(dir, spec.plan!)) as SFPlan;
  let chart: Uint8Array | undefined;
  const added: PlanTemplate[] = spec.templates.map((t) => {
    if (t.chart) chart = readFileSync(new URL(t.chart, dir));
    return {
      action: t.action,
      type: t.type,
      ...(t.file ? { content: read(dir, t.file) } : {}),
      // The chart is given to the render (as Service Fabrik's copy of it was served to it).
      ...(t.chart ? { url: `https://charts.example/${t.chart}` } : {}),
    } as PlanTemplate;
  });
  const expectedDir = new URL('expected/', dir);
  return {
    name,
    plan: { ...plan, spec: { ...plan.spec, templates: [...(plan.spec.templates ?? []), ...added] } },
    // Service Fabrik's records, as adoption leaves them: marked adopted (their Helm releases keep Service Fabrik's names).
    instance: adopted(parse(read(dir, spec.instance!)) as KubeObject),
    binding: adopted(parse(read(dir, spec.binding!)) as KubeObject),
    service: parse(read(dir, spec.service!)) as KubeObject,
    cluster: parseAllDocuments(read(dir, spec.cluster!)).map((d) => d.toJS() as KubeObject),
    ...(chart ? { chart } : {}),
    expected: new Map(readdirSync(expectedDir).map((file) => [file, read(expectedDir, file)])),
  };
}

const SAMPLES = readdirSync(ROOT, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => loadSample(entry.name));

/** What the workers give a template (activities/resources.ts, templateData), over the sample's objects. */
async function templateData(
  sample: Sample,
  withBinding: boolean,
  readFromInstanceNamespace = false,
): Promise<{ base: RenderData; data: RenderData; namespaces: string[] }> {
  const base: RenderData = {
    instance: forTemplate(sample.instance),
    plan: forTemplate(sample.plan),
    service: forTemplate(sample.service),
    ...(withBinding ? { binding: forTemplate(sample.binding) } : {}),
    generated: generatedTemplateData(undefined),
  };
  const sourcesTemplate = findTemplate(sample.plan, 'sources');
  if (!sourcesTemplate) return { base, data: base, namespaces: [] };
  const sources = await renderValues(sourcesTemplate, 'sources', base, { timeoutMs: 60_000 });
  const namespace = sample.instance.metadata.namespace!;
  const references = sourceReferences(sources, namespace);
  const fetched = references.map(
    ([key, ref]) =>
      [
        key,
        sample.cluster.find(
          (obj) =>
            obj.apiVersion === ref.apiVersion &&
            obj.kind === ref.kind &&
            obj.metadata.name === ref.name &&
            obj.metadata.namespace === (readFromInstanceNamespace ? namespace : ref.namespace),
        ),
      ] as const,
  );
  const namespaces = [...new Set(references.map(([, ref]) => ref.namespace!))];
  return { base, data: withSources(base, fetched), namespaces };
}

/**
 * Samples whose sources name a namespace of their own: Service Fabrik reads every source from the
 * instance's namespace whatever the entry names, the inter-operator reads the one named (and
 * refuses it unless the SFService lists it in `allowedNamespaces`: docs/templates.md). They are
 * compared with the sources read from the instance's namespace, as Service Fabrik reads them,
 * after checking that this is where they differ (docs/migrating-from-service-fabrik.md).
 */
const OWN_NAMESPACE: Readonly<Record<string, string>> = { director: 'default' };

const CASES = SAMPLES.flatMap((sample) =>
  [...sample.expected.keys()]
    .filter(
      (file) => /^(instance|binding)\.[a-z]+\.(txt|error\.txt)$/.test(file) || file.endsWith('.files.json'),
    )
    .map((file) => {
      const [context, action] = file.split('.') as ['instance' | 'binding', TemplateAction];
      return { name: `${sample.name}: ${context} ${action}`, sample, context, action };
    }),
);

afterAll(() => closeRenderer());

describe("Service Fabrik's sample plans", () => {
  test('every sample has expected outputs', () => {
    expect(SAMPLES.map((s) => s.name).sort()).toEqual([
      'director',
      'helm-postgresql',
      'kubedb-postgres',
      'zalando-postgresql',
    ]);
    for (const sample of SAMPLES) expect(sample.expected.size).toBeGreaterThan(0);
  });

  test.each(CASES)(
    '$name',
    async ({ sample, context, action }) => {
      const named = OWN_NAMESPACE[sample.name];
      const { base, data, namespaces } = await templateData(
        sample,
        context === 'binding',
        named !== undefined,
      );
      if (named !== undefined) expect(namespaces).toEqual([named]);
      const template = findTemplate(sample.plan, action)!;
      // Generous time: the first render of a thread compiles the WebAssembly, helm's is large.
      const options: RenderOptions = { timeoutMs: 60_000, ...(sample.chart ? { chart: sample.chart } : {}) };
      const prefix = `${context}.${action}`;
      const failure = sample.expected.get(`${prefix}.error.txt`);

      // THEN the text is Service Fabrik's, byte for byte (a helm chart's files: as objects, below)
      const text = sample.expected.get(`${prefix}.txt`);
      if (failure !== undefined) {
        await expect(
          renderTemplate(template, action, action === 'sources' ? base : data, options),
        ).rejects.toThrow();
        return;
      }
      if (text !== undefined) {
        expect(await renderTemplate(template, action, action === 'sources' ? base : data, options)).toBe(
          text,
        );
      }

      // THEN the objects to apply are the ones Service Fabrik applies
      const objects = sample.expected.get(`${prefix}.objects.json`);
      if (objects !== undefined) {
        const namespace = sample.instance.metadata.namespace!;
        const rendered = (await renderObjects(template, action, data, options)).map((obj) => ({
          ...obj,
          metadata: { ...obj.metadata, namespace },
        }));
        expect(rendered).toEqual(JSON.parse(objects));
      }

      // THEN the status says the same state of every operation
      const status = sample.expected.get(`${prefix}.status.json`);
      if (status !== undefined) {
        const values = await renderValues(template, 'status', data, options);
        const theirs = JSON.parse(status) as Record<string, { state: string }>;
        for (const operation of ['provision', 'bind', 'unbind', 'deprovision']) {
          // Service Fabrik settles on `succeeded` and `failed` and waits on any other state.
          const state = theirs[operation]!.state;
          expect({ operation, state: readStatusSection(values, operation).state }).toEqual({
            operation,
            state: state === 'succeeded' || state === 'failed' ? state : 'in progress',
          });
        }
      }
    },
    120_000,
  );
});
