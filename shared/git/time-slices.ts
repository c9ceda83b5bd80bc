import { setImmediate as yieldToEventLoop } from 'node:timers/promises';

/** Continuous synchronous work between two returns to the event loop (timers, heartbeats, other activities). */
const SLICE_MS = 50;

/**
 * For a long synchronous loop (inflating a pack, writing thousands of files) that must not hold the
 * event loop: the answered function, awaited between steps, returns to the event loop once
 * `SLICE_MS` of work ran since the last return, and resolves at once otherwise.
 */
export function timeSlices(): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < SLICE_MS) return;
    await yieldToEventLoop();
    since = performance.now();
  };
}
