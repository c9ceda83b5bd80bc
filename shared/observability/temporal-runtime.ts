import type { LogLevel as SdkLogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import { Runtime, makeTelemetryFilterString, type TelemetryOptions } from '@temporalio/worker';
import { describeError, type Logger, type LogLevel } from '../log.js';

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
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const LEVEL_OF: Record<SdkLogLevel, LogLevel> = {
  TRACE: 'debug',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

export class TemporalLogAdapter implements SdkLogger {
  /** `minLevel`: SDK lines below it are dropped (tests keep only errors); the platform logger's own level applies too. */
  constructor(
    private readonly target: Logger,
    private readonly minLevel: LogLevel = 'debug',
  ) {}

  log(level: SdkLogLevel, message: string, meta?: LogMetadata): void {
    const ours = LEVEL_OF[level] ?? 'error';
    if (RANK[ours] < RANK[this.minLevel]) return;
    this.target[ours](message, fields(meta));
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

export interface WorkerRuntimeOptions {
  log: Logger;
  /** SDK lines below this level are dropped (default: all pass to `log`, which applies LOG_LEVEL). */
  sdkLevel?: LogLevel;
  /** `host:port` for the SDK's Prometheus endpoint (`/metrics`); unset: no worker metrics endpoint. */
  metricsBindAddress?: string;
  /** Core's own lines from this level up (forwarded to `log`); default WARN. */
  coreLogLevel?: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
}

/** The telemetry options the worker installs: core's logs forwarded, Prometheus metrics when configured. */
export function workerTelemetryOptions(options: Omit<WorkerRuntimeOptions, 'log' | 'sdkLevel'>): TelemetryOptions {
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
    logger: new TemporalLogAdapter(options.log, options.sdkLevel),
    telemetryOptions: workerTelemetryOptions(options),
  });
}
