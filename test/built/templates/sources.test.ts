/**
 * Rendering templates whose text comes from `contentEncoded` or a `url` (the size limit, the time
 * limit, refused urls); where the text comes from: test/unit/templates/sources.test.ts.
 */
import type { PlanTemplate } from '../../../src/resources/types.js';
import { closeRenderer, renderTemplate, TemplateError } from '../../../src/templates/index.js';
import { rejectionOf } from '../../support/rejection.js';
import { startTemplateServer, type TemplateServer } from '../../support/template-server.js';

afterAll(() => closeRenderer());

const failure = (promise: Promise<unknown>) => rejectionOf<TemplateError>(promise);
const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('content and contentEncoded', () => {
  test('a contentEncoded template renders', async () => {
    const t: PlanTemplate = { action: 'status', type: 'gotemplate', contentEncoded: b64('{{ .x }}') };
    expect(await renderTemplate(t, 'status', { x: 'decoded' })).toBe('decoded');
  });
});

describe('templates from a url', () => {
  let server: TemplateServer;
  let base: string;
  beforeAll(async () => {
    server = await startTemplateServer();
    base = server.base;
  });
  afterAll(() => server.close());

  test('GIVEN a url template WHEN rendered twice THEN it is fetched once and rendered', async () => {
    const t = { action: 'provision' as const, type: 'gotemplate' as const, url: `${base}/ok.tpl` };
    expect(await renderTemplate(t, 'provision', { instance: { name: 'a' } })).toBe('name: a');
    expect(await renderTemplate(t, 'provision', { instance: { name: 'b' } })).toBe('name: b');
    expect(server.hits.get('/ok.tpl')).toBe(1);
  });

  test.each([
    [
      'over 1 MiB',
      '/huge.tpl',
      /^fetching template .*\/huge.tpl failed: it is over the limit of 1048576 bytes$/,
    ],
    [
      'over 1 MiB without a content-length',
      '/chunked-huge.tpl',
      /failed: it is over the limit of 1048576 bytes$/,
    ],
    ['a 404', '/missing.tpl', /^fetching template .*\/missing.tpl failed: HTTP 404$/],
  ])('a template %s fails with a clear error', async (_, url, message) => {
    const err = await failure(
      renderTemplate({ action: 'status', type: 'gotemplate', url: `${base}${url}` }, 'status', {}),
    );
    expect(err).toBeInstanceOf(TemplateError);
    expect(err.reason).toBe('source');
    expect(err.message).toMatch(message);
  });

  test('a server that does not answer fails at the time limit', async () => {
    const started = Date.now();
    const err = await failure(
      renderTemplate(
        { action: 'status', type: 'gotemplate', url: `${base}/slow.tpl` },
        'status',
        {},
        { url: { timeoutMs: 200 } },
      ),
    );
    expect(err.message).toBe(`fetching template ${base}/slow.tpl failed: no answer within 200 ms`);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  test.each([
    ['file:///etc/passwd', 'template url file:///etc/passwd is not http(s)'],
    ['not a url', 'template url not a url is not a valid URL'],
  ])('url %j is refused', async (url, message) => {
    const err = await failure(renderTemplate({ action: 'status', type: 'gotemplate', url }, 'status', {}));
    expect([err.reason, err.message]).toEqual(['source', message]);
  });
});
