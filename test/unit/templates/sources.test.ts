/**
 * Where template text comes from: `content`, base64 `contentEncoded`, and `url` with a cache, its
 * time to live and redirects. Rendering what comes from there: test/built/templates/sources.test.ts.
 */
import type { PlanTemplate } from '../../../src/resources/types.js';
import { clearTemplateCache, TemplateError, templateText, URL_LIMITS } from '../../../src/templates/index.js';
import { rejectionOf } from '../../support/rejection.js';
import { SERVED_TEMPLATE, startTemplateServer, type TemplateServer } from '../../support/template-server.js';

const jest = import.meta.jest;
const failure = (promise: Promise<unknown>) => rejectionOf<TemplateError>(promise);

describe('content and contentEncoded', () => {
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  test.each<[string, Partial<PlanTemplate>, string]>([
    ['content', { content: 'a' }, 'a'],
    ['contentEncoded', { contentEncoded: b64('{{ 2 }}') }, '{{ 2 }}'],
    [
      'contentEncoded with line breaks',
      { contentEncoded: b64('x'.repeat(100)).replace(/(.{60})/g, '$1\n') },
      'x'.repeat(100),
    ],
    ['content before contentEncoded, as in the original', { content: 'c', contentEncoded: b64('e') }, 'c'],
    ['an empty content falls back to contentEncoded', { content: '', contentEncoded: b64('e') }, 'e'],
    ['an empty content alone is an empty template', { content: '' }, ''],
  ])('%s', async (_, fields, text) => {
    expect(await templateText({ action: 'status', type: 'gotemplate', ...fields })).toBe(text);
  });

  test.each([['not base64!'], ['YWJj=']])('contentEncoded %j is refused', async (encoded) => {
    const err = await failure(templateText({ action: 'bind', type: 'gotemplate', contentEncoded: encoded }));
    expect([err.reason, err.message]).toEqual([
      'source',
      "the bind template's contentEncoded is not valid base64",
    ]);
  });

  test('a template with no text at all is refused', async () => {
    const err = await failure(templateText({ action: 'status', type: 'gotemplate' }));
    expect(err.message).toBe('the status template has no content, contentEncoded or url');
  });
});

describe('templates from a url', () => {
  let server: TemplateServer;
  beforeAll(async () => {
    server = await startTemplateServer();
  });
  afterAll(() => server.close());

  test('renders at once share one fetch', async () => {
    const t = { action: 'status' as const, type: 'mustache' as const, url: `${server.base}/together.tpl` };
    const texts = Promise.all(Array.from({ length: 5 }, () => templateText(t)));
    await server.requested('/together.tpl');
    server.release();
    expect(await texts).toEqual(Array(5).fill(SERVED_TEMPLATE));
    expect(server.hits.get('/together.tpl')).toBe(1);
  });

  describe('with the clock under the test’s control', () => {
    beforeEach(() => {
      // Only Date: the fetches need the real timers and I/O.
      jest.useFakeTimers({
        doNotFake: [
          'hrtime',
          'nextTick',
          'performance',
          'queueMicrotask',
          'setImmediate',
          'clearImmediate',
          'setInterval',
          'clearInterval',
          'setTimeout',
          'clearTimeout',
        ],
      });
    });
    afterEach(() => jest.useRealTimers());

    test('a fetched template is fetched again once its time to live has passed', async () => {
      const t = { action: 'status' as const, type: 'gotemplate' as const, url: `${server.base}/ttl.tpl` };
      const limits = { ...URL_LIMITS, ttlMs: 50 };
      await templateText(t, limits);
      await templateText(t, limits);
      expect(server.hits.get('/ttl.tpl')).toBe(1);
      jest.setSystemTime(Date.now() + 80);
      await templateText(t, limits);
      expect(server.hits.get('/ttl.tpl')).toBe(2);
      clearTemplateCache();
      await templateText(t, limits);
      expect(server.hits.get('/ttl.tpl')).toBe(3);
    });
  });

  test('a redirect is followed', async () => {
    clearTemplateCache();
    expect(
      await templateText({ action: 'status', type: 'gotemplate', url: `${server.base}/moved.tpl` }),
    ).toBe(SERVED_TEMPLATE);
  });
});
