import pg from 'pg';

/**
 * One Postgres connection per process that LISTENs on the channels it is given and
 * hands each notice to the handlers of its channel. Whoever relies on notices must
 * also know when they may have been missed: `onState` reports every change of
 * `listening` (down on a dropped connection, up again after reconnecting), and a
 * handler that caches must distrust what it holds while `listening` is false.
 */
export interface NotificationListener {
  readonly listening: boolean;
  on(channel: string, handler: (payload: string) => void): void;
  onState(handler: (listening: boolean) => void): void;
  close(): Promise<void>;
}

export async function createNotificationListener(databaseUrl: string, channels: string[], opts: { reconnectMs?: number } = {}): Promise<NotificationListener> {
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
  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: databaseUrl });
    c.on('notification', (n) => {
      for (const h of handlers.get(n.channel) ?? []) h(n.payload ?? '');
    });
    c.on('error', () => undefined);
    c.on('end', () => {
      if (client === c) client = undefined;
      setListening(false);
      reconnectLater();
    });
    try {
      await c.connect();
      for (const ch of channels) await c.query(`LISTEN ${pg.escapeIdentifier(ch)}`);
    } catch {
      await c.end().catch(() => undefined);
      reconnectLater();
      return;
    }
    if (closed) {
      await c.end().catch(() => undefined);
      return;
    }
    client = c;
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
