/**
 * Tracing in one process: the request's server span, the Kubernetes call spans under the span
 * that is active, and nothing without a trace. Spans go to an in-memory exporter.
 */
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { callAttributes, tracedApi } from '../../../src/kube/tracing.js';
import { startTracing, tracesUrl, type Tracing } from '../../../src/tracing.js';
import { provisionBody, testApi } from '../api/support.js';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;

beforeAll(() => {
  tracing = startTracing(
    { endpoint: 'http://collector.invalid:4318', serviceName: 'test' },
    new SimpleSpanProcessor(exporter),
  );
});
afterAll(() => tracing.shutdown());
beforeEach(() => exporter.reset());

/** A stand-in for a generated Kubernetes API client: what it was called with, and its answers. */
class FakeApi {
  readonly calls: unknown[] = [];
  readNamespacedSecret(request: { name: string; namespace: string }) {
    this.calls.push(request);
    return Promise.resolve({ metadata: { name: request.name } });
  }
  replace(object: { kind: string; metadata: { name: string; namespace: string } }) {
    this.calls.push(object);
    return Promise.reject(Object.assign(new Error('HTTP-Code: 409 Body: {"data":"secret"}'), { code: 409 }));
  }
  plain() {
    return this.calls.length;
  }
}

describe('Kubernetes calls', () => {
  test('GIVEN no active span WHEN the API is called THEN it answers and no span is made', async () => {
    const api = tracedApi(new FakeApi(), '2');
    await expect(api.readNamespacedSecret({ name: 's', namespace: 'n' })).resolves.toEqual({
      metadata: { name: 's' },
    });
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  test('GIVEN an active span WHEN calls succeed and fail THEN a child span each, named by the method, with the object named and no content', async () => {
    const api = tracedApi(new FakeApi(), '2');
    await tracing.tracer.startActiveSpan('activity', async (parent) => {
      await api.readNamespacedSecret({ name: 's', namespace: 'n' });
      await expect(
        api.replace({ kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n' } }),
      ).rejects.toThrow('409');
      expect(api.plain()).toBe(2);
      parent.end();
    });
    const spans = exporter.getFinishedSpans();
    const parent = spans.find((s) => s.name === 'activity')!;
    const kube = spans.filter((s) => s.name.startsWith('kube '));
    expect(kube.map((s) => [s.name, s.attributes, s.status.code, s.status.message])).toEqual([
      [
        'kube readNamespacedSecret',
        { 'k8s.cluster.id': '2', 'k8s.namespace.name': 'n', 'k8s.object.name': 's' },
        0,
        undefined,
      ],
      [
        'kube replace',
        {
          'k8s.cluster.id': '2',
          'k8s.object.kind': 'ConfigMap',
          'k8s.namespace.name': 'n',
          'k8s.object.name': 'c',
        },
        2,
        'HTTP 409',
      ],
      ['kube plain', { 'k8s.cluster.id': '2' }, 0, undefined],
    ]);
    for (const span of kube) {
      expect(span.spanContext().traceId).toBe(parent.spanContext().traceId);
      expect(span.parentSpanId).toBe(parent.spanContext().spanId);
    }
    expect(JSON.stringify(kube.map((s) => [s.attributes, s.status, s.events]))).not.toContain('secret');
  });

  test.each([
    [
      'a request',
      { name: 'x', namespace: 'ns' },
      { 'k8s.cluster.id': '1', 'k8s.namespace.name': 'ns', 'k8s.object.name': 'x' },
    ],
    [
      'a custom object request',
      { plural: 'sfplans', namespace: 'ns' },
      { 'k8s.cluster.id': '1', 'k8s.object.kind': 'sfplans', 'k8s.namespace.name': 'ns' },
    ],
    ['nothing', undefined, { 'k8s.cluster.id': '1' }],
    ['a string', 'x', { 'k8s.cluster.id': '1' }],
  ])('GIVEN %s as first argument THEN its attributes', (_name, first, attributes) => {
    expect(callAttributes('1', first)).toEqual(attributes);
  });
});

describe('OSB requests', () => {
  test('GIVEN a tracer WHEN a provision is answered THEN one server span named by the route, with its status', async () => {
    const { osb } = testApi({ tracer: tracing.tracer });
    const res = await osb.put('/v2/service_instances/i-1', provisionBody());
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => [s.name, s.kind, s.attributes])).toEqual([
      [
        'PUT /v2/service_instances/:instance_id',
        1,
        {
          'http.request.method': 'PUT',
          'url.path': '/v2/service_instances/i-1',
          'http.route': '/v2/service_instances/:instance_id',
          'http.response.status_code': res.status,
        },
      ],
    ]);
  });

  test('GIVEN a caller that sends traceparent WHEN answered THEN the server span continues its trace', async () => {
    const { osb } = testApi({ tracer: tracing.tracer });
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    await osb.get('/v2/catalog').set('traceparent', `00-${traceId}-b7ad6b7169203331-01`);
    const [span] = exporter.getFinishedSpans();
    expect([span?.name, span?.spanContext().traceId, span?.parentSpanId]).toEqual([
      'GET /v2/catalog',
      traceId,
      'b7ad6b7169203331',
    ]);
  });

  test('GIVEN an unknown method WHEN answered 501 THEN the span is not an error', async () => {
    const { http } = testApi({ tracer: tracing.tracer });
    await http.search('/v2/catalog');
    expect(exporter.getFinishedSpans().map((s) => [s.name, s.status.code])).toEqual([['SEARCH', 0]]);
  });

  test('GIVEN no tracer WHEN a request is answered THEN no span', async () => {
    const { osb } = testApi();
    await osb.get('/v2/catalog');
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect(trace.getActiveSpan()).toBeUndefined();
  });
});

describe('tracesUrl', () => {
  test.each([
    ['http://collector:4318', 'http://collector:4318/v1/traces'],
    ['http://collector:4318/', 'http://collector:4318/v1/traces'],
    ['https://otel.example/base', 'https://otel.example/base/v1/traces'],
  ])('GIVEN %s THEN %s', (endpoint, url) => expect(tracesUrl(endpoint)).toBe(url));
});
