/**
 * A span around each Kubernetes API call made inside a trace (an activity's, when tracing is on):
 * `kube <method>` with the cluster and, where the call names them, the object's kind, namespace
 * and name. Never the object's content. Outside a trace (tracing off, or a watch) the call runs
 * as it is, with no span.
 */
import { SpanKind, SpanStatusCode, context, trace, type Attributes } from '@opentelemetry/api';

const tracer = trace.getTracer('interoperator');

/** The API client `api` of cluster `clusterId`, each of its calls in a span when in a trace. */
export function tracedApi<T extends object>(api: T, clusterId: string): T {
  return new Proxy(api, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string' || property === 'constructor')
        return value;
      const method = value as (...args: unknown[]) => unknown;
      return function traced(this: unknown, ...args: unknown[]): unknown {
        if (!trace.getActiveSpan()) return method.apply(target, args);
        return tracer.startActiveSpan(
          `kube ${property}`,
          { kind: SpanKind.CLIENT, attributes: callAttributes(clusterId, args[0]) },
          context.active(),
          (span) => {
            let result: unknown;
            try {
              result = method.apply(target, args);
            } catch (err) {
              failed(span, err);
              span.end();
              throw err;
            }
            if (!isThenable(result)) {
              span.end();
              return result;
            }
            return result.then(
              (answer) => {
                span.end();
                return answer;
              },
              (err: unknown) => {
                failed(span, err);
                span.end();
                throw err;
              },
            );
          },
        );
      };
    },
  });
}

/** What a call's first argument names: an object (`{kind, metadata}`) or a request (`{name, namespace}`). */
export function callAttributes(clusterId: string, first: unknown): Attributes {
  const attributes: Attributes = { 'k8s.cluster.id': clusterId };
  if (!first || typeof first !== 'object') return attributes;
  const arg = first as {
    kind?: unknown;
    name?: unknown;
    namespace?: unknown;
    plural?: unknown;
    metadata?: { name?: unknown; namespace?: unknown };
  };
  const kind = typeof arg.kind === 'string' ? arg.kind : arg.plural;
  const name = arg.metadata?.name ?? arg.name;
  const namespace = arg.metadata?.namespace ?? arg.namespace;
  if (typeof kind === 'string') attributes['k8s.object.kind'] = kind;
  if (typeof namespace === 'string') attributes['k8s.namespace.name'] = namespace;
  if (typeof name === 'string') attributes['k8s.object.name'] = name;
  return attributes;
}

function isThenable(value: unknown): value is Promise<unknown> {
  return !!value && typeof (value as { then?: unknown }).then === 'function';
}

function failed(span: { setStatus(s: { code: SpanStatusCode; message?: string }): void }, err: unknown) {
  const code = (err as { code?: unknown })?.code;
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: typeof code === 'number' ? `HTTP ${code}` : err instanceof Error ? err.name : 'failed',
  });
}
