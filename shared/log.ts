/** Structured JSON logs: one object a line on stdout, so any collector can parse them. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

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

export function createLogger(options: LoggerOptions = {}): Logger {
  const min = order[options.level ?? 'info'];
  const base = options.base ?? {};
  const sink = options.sink ?? ((line: string) => process.stdout.write(line + '\n'));
  const write = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (order[level] < min) return;
    sink(JSON.stringify({ time: new Date().toISOString(), level, msg, ...base, ...fields }));
  };
  return {
    debug: (msg, fields) => write('debug', msg, fields),
    info: (msg, fields) => write('info', msg, fields),
    warn: (msg, fields) => write('warn', msg, fields),
    error: (msg, fields) => write('error', msg, fields),
    child: (fields) => createLogger({ ...options, base: { ...base, ...fields } }),
  };
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
