import pg from 'pg';

/**
 * One PostgreSQL LISTEN connection, opened on first use: it listens to every channel `channels()` names
 * when it opens, hands each notification to `onNotification`, and is forgotten when lost (then
 * `onDrop` runs), so the next `connection()` opens a new one. Shared by the log relay and thread events.
 */
export class ListenConnection {
  private client: Promise<pg.Client> | null = null;

  constructor(
    private readonly databaseUrl: string,
    private readonly channels: () => Iterable<string>,
    private readonly onNotification: (channel: string, payload: string) => void,
    private readonly onDrop: () => void = () => undefined,
  ) {}

  connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    const c = new pg.Client({ connectionString: this.databaseUrl });
    const opened = (async () => {
      await c.connect();
      for (const channel of this.channels()) await c.query(`LISTEN ${channel}`);
      return c;
    })();
    this.client = opened;
    const drop = () => {
      if (this.client !== opened) return;
      this.client = null;
      this.onDrop();
    };
    c.on('error', drop);
    c.on('end', drop);
    c.on('notification', (n) => {
      if (n.payload !== undefined) this.onNotification(n.channel, n.payload);
    });
    opened.catch(drop);
    return opened;
  }

  /** The open (or opening) connection, if any. */
  current(): Promise<pg.Client> | null {
    return this.client;
  }

  async close(): Promise<void> {
    const c = this.client;
    this.client = null;
    await c?.then((client) => client.end()).catch(() => undefined);
  }
}
