/**
 * Helm templates rendered by Helm's own engine (WebAssembly in worker threads) against the `helm`
 * binary: the same chart (a subchart, CRDs, _helpers.tpl, tpl, include, required, .Files.Get,
 * .Capabilities), values, release and namespace give the same objects.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PlanTemplate } from '../../../src/resources/types.js';
import {
  closeRenderer,
  releaseName,
  renderObjects,
  renderTemplate,
  TemplateError,
  type RenderData,
  type RenderOptions,
} from '../../../src/templates/index.js';
import {
  findHelm,
  FIXTURE_CHARTS,
  helmTemplate,
  helmTool,
  objectsIn,
  packChart,
  type HelmTemplateOptions,
} from '../../support/helm.js';
import { rejectionOf } from '../../support/rejection.js';
import { describeWithTool } from '../../support/tools.js';

const helm = findHelm();
const chartDir = path.join(FIXTURE_CHARTS, 'webapp');
const chart = packChart(chartDir);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'helm-diff-'));
const chartFile = path.join(tmp, 'webapp-0.3.1.tgz');
writeFileSync(chartFile, chart);

const instance = { metadata: { name: 'a1b2c3', namespace: 'sf-a1b2c3' }, spec: { planId: 'p' } };
const data: RenderData = { instance, plan: { spec: { name: 'small' } } };
const release = releaseName('a1b2c3');
const values = (content: string): PlanTemplate => ({
  action: 'provision',
  type: 'helm',
  url: 'http://127.0.0.1:9/never-fetched.tgz',
  content,
});
const CAPABILITIES = {
  kubeVersion: 'v1.31.2',
  apiVersions: ['v1', 'apps/v1', 'apps/v1/Deployment', 'example.com/v1', 'example.com/v1/Widget'],
};

/** Our render and `helm template`'s of the same values text, as sorted objects. */
async function both(valuesText: string, options: RenderOptions, cli: Partial<HelmTemplateOptions> = {}) {
  const valuesFile = path.join(tmp, 'values.yaml');
  writeFileSync(valuesFile, valuesText);
  const ours = await renderTemplate(values(valuesText), 'provision', data, { chart, ...options });
  const theirs = helmTemplate(helm!, chartFile, {
    release,
    namespace: 'sf-a1b2c3',
    valuesFile,
    ...cli,
  });
  return { ours: objectsIn(ours), theirs: objectsIn(theirs), text: ours };
}

afterAll(async () => {
  await closeRenderer();
  rmSync(tmp, { recursive: true, force: true });
});

test('the release is named in- and the Adler-32 of the record name, in hex', () => {
  // GIVEN the record name `Wikipedia`, whose Adler-32 is 0x11E60398 (RFC 1950's example checksum)
  // THEN
  expect(releaseName('Wikipedia')).toBe('in-11e60398');
  expect(releaseName('a')).toBe('in-620062');
});

describeWithTool(helmTool(helm))('against helm template', () => {
  test('the cluster’s capabilities, a subchart and CRDs: the same objects', async () => {
    // GIVEN values that enable the ingress and set the required database host
    const valuesText =
      'database:\n  host: db.example.com\ningress:\n  enabled: true\nextraLabels:\n  tier: web\n';
    // WHEN both render with Kubernetes 1.31.2 and the Widget kind known
    const { ours, theirs, text } = await both(
      valuesText,
      { capabilities: CAPABILITIES },
      { kubeVersion: 'v1.31.2', apiVersions: ['example.com/v1/Widget'] },
    );
    // THEN the objects are the same, the CRD, the subchart's and the Widget among them
    expect(ours).toEqual(theirs);
    expect(ours.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
      expect.arrayContaining([
        'CustomResourceDefinition/widgets.example.com',
        `StatefulSet/${release}-cache`,
        `Widget/${release}-webapp`,
        `Ingress/${release}-webapp`,
      ]),
    );
    const config = ours.find((o) => o.metadata.name === `${release}-webapp-config`)!;
    expect(config.data).toMatchObject({
      greeting: `hello from ${release} in sf-a1b2c3`,
      kubeVersion: 'v1.31.2',
      hasWidgets: 'true',
      install: 'true',
      revision: '1',
      lookup: '{}',
    });
    // AND the files come in the order of their names, without NOTES.txt or partials
    const sources = [...text.matchAll(/^# Source: (.*)$/gm)].map((m) => m[1]!);
    expect(sources).toEqual([...sources].sort());
    expect(sources.some((s) => s.endsWith('NOTES.txt') || path.basename(s).startsWith('_'))).toBe(false);
  });

  test('Helm’s default capabilities, a subchart turned off by its condition: the same objects', async () => {
    // GIVEN values that turn the cache off and the monitor off
    const valuesText = 'database:\n  host: db\ncache:\n  enabled: false\nmonitor:\n  enabled: false\n';
    // WHEN both render without the cluster's capabilities
    const { ours, theirs } = await both(valuesText, {});
    // THEN
    expect(ours).toEqual(theirs);
    expect(ours.some((o) => o.kind === 'StatefulSet' || o.kind === 'Widget')).toBe(false);
  });

  test('values rendered by the gotemplate in content, over the chart’s values.yaml', async () => {
    // GIVEN a values template over the instance
    const template = values('database:\n  host: {{ .instance.metadata.name }}-db\nreplicaCount: 3\n');
    // WHEN
    const objects = await renderObjects(template, 'provision', data, { chart });
    // THEN the values reach the chart, and its defaults stay
    const deployment = objects.find((o) => o.kind === 'Deployment')!;
    expect(deployment.spec).toMatchObject({ replicas: 3 });
    const secret = objects.find((o) => o.kind === 'Secret')!;
    expect(secret.stringData).toMatchObject({ url: 'postgres://a1b2c3-db:5432/app' });
  });

  test('a value the chart requires and does not get: helm’s own message', async () => {
    // GIVEN no database host
    const valuesFile = path.join(tmp, 'empty.yaml');
    writeFileSync(valuesFile, '');
    let helmMessage = '';
    try {
      helmTemplate(helm!, chartFile, { release, namespace: 'sf-a1b2c3', valuesFile });
    } catch (err) {
      helmMessage = String((err as { stderr?: string }).stderr);
    }
    // WHEN ours renders
    const err = await rejectionOf<TemplateError>(renderTemplate(values(''), 'provision', data, { chart }));
    // THEN both say the same
    expect(err).toBeInstanceOf(TemplateError);
    expect(err.message).toContain('database.host is required');
    expect(helmMessage).toContain(err.message.replace(/^helm: provision: /, ''));
  });
});

describe('what a helm render refuses', () => {
  test('an archive that is not gzipped', async () => {
    const err = await rejectionOf<TemplateError>(
      renderTemplate(values(''), 'provision', data, { chart: Buffer.from('plain text') }),
    );
    expect(err.reason).toBe('source');
    expect(err.message).toBe('the chart is not a chart archive: it is not a gzipped tarball');
  });

  test('a gzipped file that is no chart', async () => {
    const { gzipSync } = await import('node:zlib');
    const err = await rejectionOf<TemplateError>(
      renderTemplate(values(''), 'provision', data, { chart: gzipSync('not a tarball') }),
    );
    expect(err.reason).toBe('source');
    expect(err.message).toMatch(/^helm: provision: the chart cannot be loaded: /);
  });

  test('a helm template for an action other than provision and bind', async () => {
    const err = await rejectionOf<TemplateError>(
      renderTemplate({ ...values(''), action: 'unbind' }, 'unbind', data, { chart }),
    );
    expect(err.reason).toBe('unsupported');
    expect(err.message).toBe(
      'the unbind template is of type helm, which only provision and bind templates may be',
    );
  });

  test('values that are not YAML', async () => {
    const err = await rejectionOf<TemplateError>(
      renderTemplate(values('a: [unclosed'), 'provision', data, { chart }),
    );
    expect(err.reason).toBe('template');
    expect(err.message).toMatch(/^helm: provision: the values are not valid YAML: /);
  });
});
