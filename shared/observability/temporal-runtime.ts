import type { LogLevel as SdkLogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import { Runtime, makeTelemetryFilterString, type TelemetryOptions } from '@temporalio/worker';
import { describeError, type Logger } from '../log.js';

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The SDK's metadata (`workflowId`, `activityType`, `sdkComponent`…) as the platform's snake_case fields. */
function fields(meta: LogMetadata | undefined): Record<string, unknown> | undefined {
  if (!meta) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(meta)) {
    if (value instanceof Error) Object.assign(out, describeError(value));
    else out[snake(key)] = value;
  }
  return out;
}

/**
 * The Temporal SDK's logger interface over the platform logger: the SDK's own lines (worker state,
 * workflow and activity loggers, and core's lines when forwarded) leave as the same JSON lines.
 */
export class TemporalLogAdapter implements SdkLogger {
  constructor(private readonly target: Logger) {}

  log(level: SdkLogLevel, message: string, meta?: LogMetadata): void {
    const f = fields(meta);
    switch (level) {
      case 'TRACE':
      case 'DEBUG':
        return this.target.debug(message, f);
      case 'INFO':
        return this.target.info(message, f);
      case 'WARN':
        return this.target.warn(message, f);
      default:
        return this.target.error(message, f);
    }
  }
  trace(message: string, meta?: LogMetadata): void {
    this.target.debug(message, fields(meta));
  }
  debug(message: string, meta?: LogMetadata): void {
    this.target.debug(message, fields(meta));
  }
  info(message: string, meta?: LogMetadata): void {
    this.target.info(message, fields(meta));
  }
  warn(message: string, meta?: LogMetadata): void {
    this.target.warn(message, fields(meta));
  }
  error(message: string, meta?: LogMetadata): void {
    this.target.error(message, fields(meta));
  }
}

export interface WorkerRuntimeOptions {
  log: Logger;
  /** `host:port` for the SDK's Prometheus endpoint (`/metrics`); unset: no worker metrics endpoint. */
  metricsBindAddress?: string;
  /** Core's own lines from this level up (forwarded to `log`); default WARN. */
  coreLogLevel?: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
}

/** The telemetry options the worker installs: core's logs forwarded, Prometheus metrics when configured. */
export function workerTelemetryOptions(options: Omit<WorkerRuntimeOptions, 'log'>): TelemetryOptions {
  return {
    logging: {
      filter: makeTelemetryFilterString({ core: options.coreLogLevel ?? 'WARN', other: 'ERROR' }),
      forward: {},
    },
    ...(options.metricsBindAddress
      ? {
          metrics: {
            prometheus: {
              bindAddress: options.metricsBindAddress,
              countersTotalSuffix: true,
              unitSuffix: true,
              useSecondsForDurations: true,
            },
          },
        }
      : {}),
  };
}

/**
 * Installs the process's Temporal Runtime (once per process, before any NativeConnection or Worker):
 * SDK logs through the platform logger, worker metrics on their own Prometheus port when configured.
 */
export function installWorkerRuntime(options: WorkerRuntimeOptions): Runtime {
  return Runtime.install({
    logger: new TemporalLogAdapter(options.log),
    telemetryOptions: workerTelemetryOptions(options),
  });
}
