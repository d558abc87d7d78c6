import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createNotificationListener } from '../../storage/db/notifications.ts';
import { createTcpFaultProxy } from '../tcpFaultProxy.ts';

const CHANNEL = 'silico_listener_test';
const db = new pg.Client({ connectionString: process.env.DATABASE_URL! });
after(() => db.end());

/** Resolves with the next value `subscribe` reports that `wanted` accepts; fails after `ms`. */
function next<T>(subscribe: (h: (v: T) => void) => void, wanted: (v: T) => boolean, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
    subscribe((v) => {
      if (!wanted(v)) return;
      clearTimeout(timer);
      resolve(v);
    });
  });
}

test('a LISTEN connection that goes silent is noticed, reported as not listening, and replaced once Postgres answers again', async () => {
  await db.connect();
  const url = new URL(process.env.DATABASE_URL!);
  const proxy = await createTcpFaultProxy({ host: url.hostname, port: Number(url.port) });
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  const listener = await createNotificationListener(url.toString(), [CHANNEL], { heartbeatMs: 200, answerMs: 500, reconnectMs: 100 });
  try {
    assert.equal(listener.listening, true);
    const payloads: Array<(p: string) => void> = [];
    listener.on(CHANNEL, (p) => { for (const h of payloads) h(p); });
    const states: Array<(l: boolean) => void> = [];
    listener.onState((l) => { for (const h of states) h(l); });
    const notice = (payload: string) => next<string>((h) => payloads.push(h), (p) => p === payload, 5000, `notice ${payload}`);

    let got = notice('before');
    await db.query('SELECT pg_notify($1, $2)', [CHANNEL, 'before']);
    await got;

    // The relay stops answering without closing anything: TCP alone would not notice for hours.
    const down = next<boolean>((h) => states.push(h), (l) => !l, 5000, 'not listening');
    proxy.setMode('paused');
    await down;
    assert.equal(listener.listening, false);

    const up = next<boolean>((h) => states.push(h), (l) => l, 10_000, 'listening again');
    proxy.setMode('pass');
    await up;
    got = notice('after');
    await db.query('SELECT pg_notify($1, $2)', [CHANNEL, 'after']);
    await got;
  } finally {
    await listener.close();
    await proxy.close();
  }
});
