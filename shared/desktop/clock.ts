/**
 * The desktop module's clock (credit cache ages, the wait after a refused device credential, sign-in
 * attempt expiry). Tests move it instead of sleeping; production uses the wall clock.
 */
import { onProcessReset } from '../process-state.js';
let nowFn: () => number = () => Date.now();
onProcessReset('shared/desktop/clock.ts#nowFn', () => {
  nowFn = () => Date.now();
});

export function desktopNow(): number {
  return nowFn();
}

/** Replaces the clock (tests); `undefined` restores the wall clock. */
export function setDesktopClock(fn: (() => number) | undefined): void {
  nowFn = fn ?? (() => Date.now());
}
