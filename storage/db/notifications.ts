import pg from 'pg';

/**
 * One Postgres connection per process that LISTENs on the channels it is given and
 * hands each notice to the handlers of its channel. Whoever relies on notices must
 * also know when they may have been missed: `onState` reports every change of
 * `listening` (down on a dropped connection, up again after reconnecting), and a
 * handler that caches must distrust what it holds while `listening` is false.
 *
 * A connection can also die silently (a peer gone without a reset, a partition): nothing
 * errors and no notice comes, for as long as TCP takes to notice (hours). So the
 * listener asks Postgres a trivial question every `heartbeatMs`; one not answered within
 * `answerMs` ends that connection (reported as not listening) and a new one is made. A
 * connection (and its LISTENs) not made within `answerMs` is given up and tried again.
 */
export interface NotificationListener {
  readonly listening: boolean;
  on(channel: string, handler: (payload: string) => void): void;
  onState(handler: (listening: boolean) => void): void;
  close(): Promise<void>;
}

export async function createNotificationListener(
  databaseUrl: string, channels: string[], opts: { reconnectMs?: number; heartbeatMs?: number; answerMs?: number } = {},
): Promise<NotificationListener> {
  const heartbeatMs = opts.heartbeatMs ?? 10_000;
  const answerMs = opts.answerMs ?? 10_000;
  const handlers = new Map<string, Array<(payload: string) => void>>(channels.map((c) => [c, []]));
  const stateHandlers: Array<(listening: boolean) => void> = [];
  let listening = false;
  let closed = false;
  let client: pg.Client | undefined;

  const setListening = (v: boolean) => {
    if (listening === v) return;
    listening = v;
    for (const h of stateHandlers) h(v);
  };
  let retry: NodeJS.Timeout | undefined;
  const reconnectLater = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, opts.reconnectMs ?? 1000);
    retry.unref();
  };
  /** Ends `c` after `ms` unless the returned function is called first (pg destroys the socket of a client with a query pending). */
  const endAfter = (c: pg.Client, ms: number) => {
    const timer = setTimeout(() => void c.end().catch(() => undefined), ms);
    return () => clearTimeout(timer);
  };
  /** Asks `c` a trivial question every `heartbeatMs`, until it ends; one not answered in time ends it. */
  const heartbeat = (c: pg.Client) => {
    let asking = false;
    const timer = setInterval(() => {
      if (asking) return;
      asking = true;
      const answered = endAfter(c, answerMs);
      c.query('SELECT 1').catch(() => undefined).finally(() => {
        asking = false;
        answered();
      });
    }, heartbeatMs);
    timer.unref();
    c.once('end', () => clearInterval(timer));
  };
  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: databaseUrl, keepAlive: true });
    c.on('notification', (n) => {
      for (const h of handlers.get(n.channel) ?? []) h(n.payload ?? '');
    });
    c.on('error', () => undefined);
    c.on('end', () => {
      // A connection that was already replaced (or never became the one) changes nothing.
      if (client !== c) return;
      client = undefined;
      setListening(false);
      reconnectLater();
    });
    const made = endAfter(c, answerMs);
    try {
      await c.connect();
      for (const ch of channels) await c.query(`LISTEN ${pg.escapeIdentifier(ch)}`);
    } catch {
      await c.end().catch(() => undefined);
      reconnectLater();
      return;
    } finally {
      made();
    }
    if (closed) {
      await c.end().catch(() => undefined);
      return;
    }
    client = c;
    heartbeat(c);
    setListening(true);
  };
  await connect();

  return {
    get listening() {
      return listening;
    },
    on(channel, handler) {
      const list = handlers.get(channel);
      if (!list) throw new Error(`not listening on ${channel}`);
      list.push(handler);
    },
    onState(handler) {
      stateHandlers.push(handler);
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      setListening(false);
      await client?.end().catch(() => undefined);
    },
  };
}
