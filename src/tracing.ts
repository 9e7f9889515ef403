/**
 * OpenTelemetry tracing, installed only when a collector is configured: one trace from an OSB
 * request (its server span, src/api) through the workflow it starts (Temporal's OpenTelemetry
 * interceptors carry the context in the workflow's headers) to the activities and their
 * Kubernetes calls (src/kube), sent by OTLP over HTTP (JSON) to the collector. Without a
 * collector nothing is registered: the OpenTelemetry API stays a no-op and no interceptor runs.
 */
import { createRequire } from 'node:module';
import { context, propagation, trace, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ClientInterceptors } from '@temporalio/client';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  makeWorkflowExporter,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { TracingConfig } from './config.js';

/** The name of the tracer of our own spans (OSB requests, Kubernetes calls). */
export const TRACER_NAME = 'interoperator';

/** Tracing as installed in this process. */
export interface Tracing {
  /** The tracer of our own spans. */
  readonly tracer: Tracer;
  /** Interceptors of a Temporal client that starts or signals workflows. */
  readonly clientInterceptors: ClientInterceptors;
  /**
   * A worker's activity interceptors and the sink that exports workflow spans (the workflow
   * interceptors are in the traced workflow bundle, src/roots/workflow-bundle.ts).
   */
  readonly worker: {
    readonly interceptors: WorkerInterceptors;
    readonly sinks: InjectedSinks<OpenTelemetrySinks>;
  };
  /** Sends the spans not yet sent, then stops. */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry's workflow interceptors' module, bundled with the workflows into the traced bundle
 * (src/roots/workflow-bundle.ts): it runs in their sandbox.
 */
export const WORKFLOW_INTERCEPTORS = createRequire(import.meta.url).resolve(
  '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors',
);

/** Workflow spans a worker remembers having exported, to send each once: the most recent ones. */
const REMEMBERED_SPANS = 10_000;

/**
 * The workflow spans' exporter, sending each span once: a workflow task whose completion the server
 * refused (a signal came meanwhile) runs again and hands over the spans it made again, with the
 * same ids (the sandbox's randomness is the run's).
 */
function eachSpanOnce(
  sink: InjectedSinks<OpenTelemetrySinks>['exporter'],
): InjectedSinks<OpenTelemetrySinks>['exporter'] {
  const sent = new Set<string>();
  return {
    export: {
      ...sink.export,
      fn: (info, spans) => {
        const fresh = spans.filter((span) => {
          const id = `${span.spanContext.traceId}/${span.spanContext.spanId}`;
          if (sent.has(id)) return false;
          sent.add(id);
          // A Set iterates in insertion order: the first is the oldest.
          if (sent.size > REMEMBERED_SPANS) sent.delete(sent.values().next().value!);
          return true;
        });
        if (fresh.length > 0) void sink.export.fn(info, fresh);
      },
    },
  };
}

/** The URL spans are posted to: the signal path under the collector's base URL, as OTLP defines it. */
export function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * Registers the tracer provider, the context manager (AsyncLocalStorage, so that a span started
 * in a request is the parent of what the request's code does) and the W3C trace-context
 * propagator (which the Temporal interceptors use to carry the context in headers).
 *
 * @param spanProcessor where spans go @default a batch processor over an OTLP/HTTP exporter to the
 *   configured collector
 */
export function startTracing(config: TracingConfig, spanProcessor?: SpanProcessor): Tracing {
  const resource = new Resource({ 'service.name': config.serviceName });
  const processor =
    spanProcessor ?? new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl(config.endpoint) }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return {
    tracer: trace.getTracer(TRACER_NAME),
    clientInterceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
    worker: {
      interceptors: {
        activity: [
          (ctx) => ({
            inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
            outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
          }),
        ],
      },
      sinks: { exporter: eachSpanOnce(makeWorkflowExporter(processor, resource)) },
    },
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
