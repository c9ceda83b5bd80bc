import { spawn } from 'node:child_process';
import { EffectOutcomeUnknownError, notApplied, type Executor } from './types.js';
import { ActionReviewCodes } from '../refusals.js';

/** Output kept in the receipt per stream; the rest is cut (and says so). */
const MAX_OUTPUT_BYTES = 64 * 1024;

function collector() {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  return {
    push(chunk: Buffer) {
      if (size >= MAX_OUTPUT_BYTES) return void (truncated = true);
      const part = chunk.subarray(0, MAX_OUTPUT_BYTES - size);
      if (part.length < chunk.length) truncated = true;
      chunks.push(part);
      size += part.length;
    },
    text: () => Buffer.concat(chunks).toString('utf8') + (truncated ? '\n[output truncated]' : ''),
  };
}

/** Only the deployment's PATH and a locale: no credentials or platform settings leak into the command. */
function scrubbedEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
}

/**
 * Runs an allow-listed command (no shell) with a scrubbed environment and a timeout. A command
 * that ran to completion is `executed` whatever its exit code (the receipt carries it); one cut
 * short by the timeout or a worker shutdown may have done part of its work, so that is unknown.
 */
export const localCliExecutor: Executor<'local_cli.run.v1'> = {
  actionType: 'local_cli.run.v1',
  execute(payload, ctx) {
    const allowed = ctx.config.actionReview.localCliAllowedCommands;
    if (!allowed.includes(payload.command)) {
      return Promise.resolve(
        notApplied(
          ActionReviewCodes.command_not_allowed,
          `"${payload.command}" is not on this deployment's allow-list (LOCAL_CLI_ALLOWED_COMMANDS).`,
        ),
      );
    }
    const timeoutMs = ctx.config.actionReview.localCliTimeoutSeconds * 1000;
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const child = spawn(payload.command, payload.args, {
        env: scrubbedEnv(),
        shell: false,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const stdout = collector();
      const stderr = collector();
      let spawned = false;
      let stopReason: string | null = null;
      const stop = (reason: string) => {
        stopReason ??= reason;
        child.kill('SIGKILL');
      };
      const timer = setTimeout(() => stop(`timed out after ${timeoutMs / 1000} s`), timeoutMs);
      const onAbort = () => stop('the worker stopped while the command ran');
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      child.on('spawn', () => (spawned = true));
      child.stdout.on('data', (c: Buffer) => stdout.push(c));
      child.stderr.on('data', (c: Buffer) => stderr.push(c));
      child.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        ctx.signal.removeEventListener('abort', onAbort);
        if (!spawned)
          resolve(
            notApplied(
              ActionReviewCodes.command_not_started,
              `${payload.command} could not be started (${err.code ?? err.message}).`,
            ),
          );
        else reject(err);
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        ctx.signal.removeEventListener('abort', onAbort);
        if (!spawned) return; // 'error' answered already
        if (stopReason)
          return reject(
            new EffectOutcomeUnknownError(
              `${payload.command} was killed: ${stopReason}; it may have done part of its work.`,
            ),
          );
        resolve({
          outcome: 'executed',
          result: {
            command: payload.command,
            args: payload.args,
            exit_code: code,
            signal,
            succeeded: code === 0,
            stdout: stdout.text(),
            stderr: stderr.text(),
            duration_ms: Date.now() - started,
          },
        });
      });
    });
  },
};
