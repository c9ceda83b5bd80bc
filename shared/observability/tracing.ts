/**
 * OpenTelemetry traces: off unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set (or a test passes an
 * exporter), and then one trace runs from the HTTP request (W3C `traceparent` accepted) through the
 * workflow start or Update (client interceptor), the workflow and its activities (the Temporal SDK's
 * OpenTelemetry plugin on the worker). Off means nothing is registered: the API's no-op tracer.
 *
 * The OTLP exporter posts to the operator's own collector with its own HTTP client (not
 * `shared/http/egress.ts`): the destination is deployment configuration, not caller input.
 */
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryPlugin, OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';

export interface Tracing {
  resource: Resource;
  spanProcessor: SpanProcessor;
  provider: BasicTracerProvider;
  /** Flushes pending spans and stops exporting. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** `service.name` of the spans (api, worker). */
  serviceName: string;
  /** OTLP/HTTP collector base URL (`/v1/traces` is appended). */
  otlpEndpoint?: string;
  /** Tests: an in-process exporter (spans exported synchronously, one by one). */
  exporter?: SpanExporter;
}

/** Registers the process's tracer provider, context manager and W3C propagator; undefined when tracing is off. */
export function startTracing(options: TracingOptions): Tracing | undefined {
  if (!options.exporter && !options.otlpEndpoint) return undefined;
  const resource = new Resource({ 'service.name': options.serviceName });
  const spanProcessor = options.exporter
    ? new SimpleSpanProcessor(options.exporter)
    : new BatchSpanProcessor(new OTLPTraceExporter({ url: `${options.otlpEndpoint!.replace(/\/+$/, '')}/v1/traces` }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register({
    contextManager: new AsyncLocalStorageContextManager().enable(),
    propagator: new W3CTraceContextPropagator(),
  });
  return { resource, spanProcessor, provider, shutdown: () => provider.shutdown() };
}

/** The Temporal client's interceptors: workflow start, signal, query and Update spans, context passed in headers. */
export function temporalClientInterceptors(tracing: Tracing | undefined) {
  return tracing ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
}

/** The worker's plugin: workflow (via a sink) and activity spans, parented on the caller's context. */
export function temporalWorkerPlugins(tracing: Tracing | undefined) {
  return tracing ? [new OpenTelemetryPlugin({ resource: tracing.resource, spanProcessor: tracing.spanProcessor })] : [];
}
