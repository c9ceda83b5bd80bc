/**
 * Keeps one process running for `npm start` (worker, API, Temporal dev server, embedded PostgreSQL):
 * when it exits without being asked to, it is started again after an exponential backoff, and the
 * supervisor gives up only when the process keeps failing right after start.
 *
 * The process itself is behind `start()` (it answers a `Run`), and time behind a `Clock`, so the
 * restart, backoff and give-up rules are tested without processes or real time.
 */

/** One running instance of the supervised process. */
export interface Run {
  /** Resolves, once it ends, with how it ended (`SIGKILL`, `code 1`). */
  exited: Promise<string>;
  /** Asks it to stop and resolves once it has; a no-op when it has already ended. */
  stop(): Promise<void>;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export interface RestartPolicy {
  /** Delay before the first restart; it doubles with each restart in a row. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** A process that ran this long before it exited starts the backoff over. */
  stableAfterMs: number;
  /** An exit (or a failed restart) this soon after a start counts as failing right after start… */
  quickExitMs: number;
  /** …and this many of them in a row make the supervisor give up. */
  maxQuickExits: number;
}

export const defaultRestartPolicy: RestartPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  stableAfterMs: 60_000,
  quickExitMs: 10_000,
  maxQuickExits: 5,
};

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Delay before the `restart`-th restart in a row (1-based): initial × 2^(restart−1), capped. */
export function restartDelay(restart: number, policy: RestartPolicy = defaultRestartPolicy): number {
  return Math.min(policy.initialDelayMs * 2 ** Math.max(0, restart - 1), policy.maxDelayMs);
}

/** `500` → `0.5 s`, `30000` → `30 s`. */
export const seconds = (ms: number) => `${Number((ms / 1000).toFixed(1))} s`;

export interface SupervisorOptions {
  /** As the log names it: `worker`, `API`, `PostgreSQL`… */
  name: string;
  /** Starts the process; resolves once it runs (or is ready, for servers), rejects if it could not start. */
  start(): Promise<Run>;
  log(line: string): void;
  /** Called once when the process keeps failing right after start; nothing is restarted after it. */
  onGiveUp(reason: string): void;
  policy?: Partial<RestartPolicy>;
  clock?: Clock;
}

export class Supervisor {
  private readonly policy: RestartPolicy;
  private readonly clock: Clock;
  private current: Run | undefined;
  private starting: Promise<Run> | undefined;
  private stopping = false;
  private wake: () => void = () => {};
  private readonly stopped = new Promise<void>((resolve) => (this.wake = resolve));
  /** Restarts in a row (drives the backoff); back to 0 after a stable run. */
  private streak = 0;
  /** Exits in a row that came right after a start. */
  private quickExits = 0;
  private total = 0;
  private watching: Promise<void> | undefined;

  constructor(private readonly options: SupervisorOptions) {
    this.policy = { ...defaultRestartPolicy, ...options.policy };
    this.clock = options.clock ?? realClock;
  }

  /** Restarts so far. */
  get restarts(): number {
    return this.total;
  }

  /** The first start: rejects (and supervises nothing) when it fails, since then the start itself failed. */
  async start(): Promise<void> {
    const run = await this.launch();
    if (this.stopping) return void (await run.stop());
    this.watching = this.watch(run, this.clock.now());
  }

  /** No restart from now on, not even one already scheduled (the process itself keeps running). */
  retire(): void {
    this.stopping = true;
    this.wake();
  }

  /** Stops the process for good: retire(), then stop what runs (or is starting). */
  async stop(): Promise<void> {
    this.retire();
    await this.starting?.catch(() => undefined); // a restart under way finishes, then is stopped below
    await this.current?.stop();
  }

  /** Resolves once supervision has ended (stopped or given up); for tests. */
  async settled(): Promise<void> {
    await this.watching;
  }

  private launch(): Promise<Run> {
    const starting = this.options.start().then((run) => (this.current = run));
    this.starting = starting;
    return starting;
  }

  private async watch(run: Run, startedAt: number): Promise<void> {
    const { name, log } = this.options;
    let ended: string = `exited (${await run.exited})`;
    for (;;) {
      if (this.stopping) return;
      const upMs = this.clock.now() - startedAt;
      if (upMs >= this.policy.stableAfterMs) this.streak = 0;
      this.quickExits = upMs < this.policy.quickExitMs ? this.quickExits + 1 : 0;
      if (this.quickExits >= this.policy.maxQuickExits) {
        const reason = `${name} ${ended}, the ${this.quickExits}th time in a row within ${seconds(this.policy.quickExitMs)} of its start; giving up`;
        log(reason);
        this.options.onGiveUp(reason);
        return;
      }
      this.streak++;
      this.total++;
      const delay = restartDelay(this.streak, this.policy);
      log(`${name} ${ended}; restarting in ${seconds(delay)} (restart ${this.streak})`);
      await Promise.race([this.clock.sleep(delay), this.stopped]);
      if (this.stopping) return;
      startedAt = this.clock.now();
      try {
        run = await this.launch();
      } catch (err) {
        startedAt = this.clock.now(); // a failed start is failing right after start, however long it took
        ended = `failed to start again (${err instanceof Error ? err.message : String(err)})`;
        continue;
      }
      if (this.stopping) return; // stop() stops this run once its start has finished
      log(`${name} restarted`);
      ended = `exited (${await run.exited})`;
    }
  }
}
