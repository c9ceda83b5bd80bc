/**
 * Structured JSON logs through pino: one object a line on stdout, so any collector can parse them.
 * Every line carries `time`, `level`, `msg` and the bound fields (`service`, `request_id`…); inside an
 * activity the SDK's activity context adds `workflow_id`, `run_id` and `activity_type`, and an active
 * OpenTelemetry span adds `trace_id` and `span_id`. Secrets and tokens are redacted by path (below).
 */
import { trace } from '@opentelemetry/api';
import { asyncLocalStorage as activityContext } from '@temporalio/activity';
import {
  destination,
  pino,
  stdTimeFunctions,
  type Logger as PinoLogger,
  type LoggerOptions as PinoOptions,
} from 'pino';
import { onProcessReset } from './process-state.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  base?: Record<string, unknown>;
  /** Where lines go; stdout by default. Tests pass a collector. */
  sink?: (line: string) => void;
}

export const REDACTED = '[redacted]';

/** Field names that hold credentials, redacted at the top level and one or two levels down. */
const SECRET_KEYS = [
  'authorization',
  'cookie',
  'set-cookie',
  'password',
  'secret',
  'client_secret',
  'api_key',
  'apiKey',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'private_key',
  'x-platform-service-token',
  'x-platform-internal-token',
];

/** pino redaction paths (fast-redact syntax): `key`, `*.key`, `*.*.key` for every secret key. */
export const REDACT_PATHS = SECRET_KEYS.flatMap((key) => {
  const k = /^[A-Za-z_$][\w$]*$/.test(key) ? key : `["${key}"]`;
  const dot = k.startsWith('[') ? '' : '.';
  return [k.startsWith('[') ? k : key, `*${dot}${k}`, `*.*${dot}${k}`];
});

/** Bearer credentials and the platform's token shapes, scrubbed from free text (messages, error text). */
const TOKEN_IN_TEXT = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]+|\b(gp_|gsk_)[A-Za-z0-9_-]{8,}/gi;

export function scrubText(text: string): string {
  return text.replace(TOKEN_IN_TEXT, (_m, bearer: string | undefined, prefix: string | undefined) =>
    bearer ? `${bearer}${REDACTED}` : `${prefix ?? ''}${REDACTED}`,
  );
}

/** Workflow and activity identity inside an activity, the trace inside a span: added to every line. */
function contextFields(): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const activity = activityContext.getStore();
  if (activity) {
    const info = activity.info;
    fields.workflow_id = info.workflowExecution?.workflowId;
    fields.run_id = info.workflowExecution?.runId;
    fields.activity_type = info.activityType;
    fields.activity_id = info.activityId;
    fields.attempt = info.attempt;
  }
  const span = trace.getActiveSpan()?.spanContext();
  if (span && trace.isSpanContextValid(span)) {
    fields.trace_id = span.traceId;
    fields.span_id = span.spanId;
  }
  return fields;
}

function pinoOptions(level: LogLevel): PinoOptions {
  return {
    level,
    base: null,
    messageKey: 'msg',
    timestamp: stdTimeFunctions.isoTime,
    formatters: {
      level: (label) => ({ level: label }),
      log: (object) => {
        for (const [key, value] of Object.entries(object))
          if (typeof value === 'string' && (key === 'error_message' || key === 'stack' || key.endsWith('_detail')))
            object[key] = scrubText(value);
        return object;
      },
    },
    mixin: contextFields,
    redact: { paths: REDACT_PATHS, censor: REDACTED },
  };
}

function wrap(p: PinoLogger): Logger {
  const at =
    (level: LogLevel) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (!p.isLevelEnabled(level)) return;
      const text = scrubText(msg);
      if (fields) p[level](fields, text);
      else p[level](text);
    };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (fields) => wrap(p.child(fields)),
  };
}

const taps = new Set<(line: string) => void>();
onProcessReset('shared/log.ts#taps', () => {
  taps.clear();
});

/**
 * Every log line this process writes (already redacted), as JSON text, to `listener` until the
 * returned function is called (hosted-mode log WebSockets). A listener must not log.
 */
export function tapLogLines(listener: (line: string) => void): () => void {
  taps.add(listener);
  return () => taps.delete(listener);
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const sink = options.sink;
  const target = sink
    ? { write: (line: string) => sink(line.endsWith('\n') ? line.slice(0, -1) : line) }
    : destination({ dest: 1, sync: true });
  const out = {
    write: (line: string) => {
      target.write(line);
      if (taps.size === 0) return;
      const text = line.endsWith('\n') ? line.slice(0, -1) : line;
      for (const tap of taps) tap(text);
    },
  };
  const root = pino(pinoOptions(options.level ?? 'info'), out);
  return wrap(options.base && Object.keys(options.base).length ? root.child(options.base) : root);
}

/**
 * A short description of an unknown thrown value, for logs only (never for responses): with the
 * error's `logDetail` (text a dependency answered, kept out of responses) and its cause's message.
 */
export function describeError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { error_message: String(err) };
  const { logDetail } = err as { logDetail?: unknown };
  const c = err.cause as { code?: unknown; logDetail?: unknown } | undefined;
  const cause =
    err.cause instanceof Error
      ? {
          cause_name: err.cause.name,
          cause_message: err.cause.message,
          cause_code: c?.code,
          cause_log_detail: c?.logDetail,
        }
      : {};
  return {
    error_name: err.name,
    error_message: err.message,
    stack: err.stack,
    ...cause,
    ...(logDetail === undefined ? {} : { log_detail: logDetail }),
  };
}
