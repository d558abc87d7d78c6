import http from 'node:http';
import getPort from 'get-port';
import { startBiologyFixtures } from './fixtures/biology/server.ts';

/**
 * The biology sources of the test stack: one fixture server answering as UniProt, RCSB
 * and NCBI do, started by `npm test` before the stack (whose workers are pointed at it),
 * and a small control endpoint beside it, so test files (separate processes) can make a
 * source fail, throttle or misbehave and read what was requested of it.
 */
export async function serveBiologySources(): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  const fixtures = await startBiologyFixtures();
  const port = await getPort();
  const control = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      try {
        if (req.method === 'POST' && req.url === '/mode') {
          const { source, mode } = JSON.parse(body);
          fixtures.setMode(source, mode);
          res.writeHead(204).end();
        } else if (req.method === 'GET' && req.url === '/requests') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(fixtures.requests));
        } else res.writeHead(404).end();
      } catch (err) {
        res.writeHead(400).end(String(err));
      }
    });
  });
  await new Promise<void>((r) => control.listen(port, '127.0.0.1', r));
  return {
    // Records over 1 MiB are refused here (the oversized answer stays small to send), and a
    // source that stalls 3 s has timed out (a stalled one is quick to test).
    env: { ...fixtures.env, SILICO_BIOLOGY_MAX_RECORD_BYTES: String(1024 * 1024), SILICO_BIOLOGY_TIMEOUT_SECONDS: '3', SILICO_TEST_BIOLOGY_CONTROL: `http://127.0.0.1:${port}` },
    close: async () => {
      await new Promise((r) => control.close(r));
      await fixtures.close();
    },
  };
}

type Source = 'uniprot' | 'pdb' | 'ncbi';

/** Sets how a fixture source answers from now on (`{kind: 'status', status: 503}`, ...; 'ok' to restore). */
export async function setSourceMode(source: Source, mode: unknown): Promise<void> {
  const res = await fetch(`${process.env.SILICO_TEST_BIOLOGY_CONTROL}/mode`, { method: 'POST', body: JSON.stringify({ source, mode }) });
  if (res.status !== 204) throw new Error(`fixture control: ${res.status} ${await res.text()}`);
}

/** Every request the fixture sources have answered so far. */
export async function sourceRequests(): Promise<Array<{ method: string; path: string; host: string; at: number }>> {
  return (await fetch(`${process.env.SILICO_TEST_BIOLOGY_CONTROL}/requests`)).json() as never;
}
