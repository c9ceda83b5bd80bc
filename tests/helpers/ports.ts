import { readFileSync } from 'node:fs';
import net from 'node:net';
import { freePort } from '../../scripts/lib/net.js';

/** The lowest port of the kernel's ephemeral range (`ip_local_port_range`), where binds to port 0 land. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 20_100 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port free on 127.0.0.1 a moment ago, below the ephemeral range: no process binding port 0 (another
 * test's fake server, the Temporal dev server's HTTP API and metrics listeners, which `npm start` leaves to
 * the system: `--http-port` and `--metrics-port` default to random free ports) can take it between this
 * choice and the listen of the process it is given to. `freePort`'s ports come from that range: a CI run's
 * `npm start` test got a 404 from `/readyz` on the API's port, as from such a listener.
 */
export async function portOutsideEphemeralRange(): Promise<number> {
  const low = ephemeralLow();
  for (let i = 0; i < 100; i++) {
    const port = 20_000 + Math.floor(Math.random() * (low - 20_000));
    if (await canBind(port)) return port;
  }
  return freePort();
}
