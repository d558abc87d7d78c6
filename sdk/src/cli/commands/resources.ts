import path from 'node:path';
import type { Silico } from '../../client.ts';
import type { RunEvent } from '../../models.ts';
import type { ResponseBody } from '../../types.ts';
import { EXIT, parsePairs, table, type Out } from '../output.ts';

/** The read and file commands: thin, each one SDK call and one way to print it. */

export async function capabilities(client: Silico, flags: { limit: number }, out: Out): Promise<number> {
  const page = await client.capabilities.list({ limit: flags.limit });
  out.result(page.body, () => table(page.items as never, ['ref', 'title']));
  return EXIT.ok;
}

export async function hubSearch(client: Silico, query: string | undefined, flags: { tag?: string[]; packageType?: string; limit: number }, out: Out): Promise<number> {
  const page = await client.hub.search({
    ...(query ? { query } : {}), ...(flags.tag?.length ? { tags: flags.tag } : {}),
    ...(flags.packageType ? { package_type: flags.packageType as 'lab' | 'model' } : {}), limit: flags.limit,
  });
  out.result(page.body, () => table(page.items as never, ['ref', 'title', 'package_type', 'qualification_state']));
  return EXIT.ok;
}

type AccountView = ResponseBody<'account_get'>;

/** A holder's caps in one line: what bounds it, or that nothing does. */
function capsLine(c: AccountView['spend_caps']['account']): string {
  const caps = [c.monthly_usd === null ? null : `$${c.monthly_usd} a month`, c.per_run_usd === null ? null : `$${c.per_run_usd} a run`].filter(Boolean);
  return `${caps.length ? caps.join(', ') : 'no cap'}; $${c.month_spent_usd ?? 0} spent this month`;
}

export async function account(client: Silico, out: Out): Promise<number> {
  const a: AccountView = await client.account.get();
  out.result(a, () => {
    const c = a.holdings.compute;
    return [
      `account   ${a.account.namespace} (${a.account.kind}) ${a.account.id}`,
      `key       ${a.access.key_prefix}… scopes: ${a.access.scopes.join(' ')}`,
      `compute   $${c.available_usd} available, $${c.reserved_usd} reserved, $${c.spent_usd} spent`,
      `today     ${a.usage.requests_today.this_key} requests with this key`,
      `caps      account: ${capsLine(a.spend_caps.account)}`,
      `          this key: ${capsLine(a.spend_caps.key)}`,
    ].join('\n');
  });
  return EXIT.ok;
}

const RUN_COLUMNS = ['id', 'status', 'resolved_ref', 'created_at', 'credits_settled'];

export async function runsList(client: Silico, flags: { status?: string; limit: number; metadata: string[] }, out: Out): Promise<number> {
  const page = await client.runs.list({
    limit: flags.limit, ...(flags.status ? { status: flags.status as never } : {}),
    ...(flags.metadata.length ? { metadata: parsePairs(flags.metadata, '--metadata', false) as Record<string, string> } : {}),
  });
  out.result(page.body, () => table(page.items as never, RUN_COLUMNS));
  return EXIT.ok;
}

export async function runsGet(client: Silico, id: string, out: Out): Promise<number> {
  const run = await client.runs.get(id);
  out.result(run, () => table([run as never], RUN_COLUMNS) + (run.error ? `\nerror: ${run.error.code}: ${run.error.message}` : ''));
  return EXIT.ok;
}

export async function runsCancel(client: Silico, id: string, out: Out): Promise<number> {
  const run = await client.runs.cancel(id);
  out.result(run, () => `run ${run.id} is ${run.status}`);
  return EXIT.ok;
}

/** Events as lines (or one JSON object per line with --json); --follow reads to the end. */
export async function runsEvents(client: Silico, id: string, flags: { follow?: boolean; after?: number }, out: Out): Promise<number> {
  const show = (e: RunEvent) => process.stdout.write(out.json ? `${JSON.stringify(e)}\n` : `${String(e.seq).padStart(5)}  ${e.at}  ${e.type.padEnd(14)} ${e.message}\n`);
  for await (const e of client.runs.handle(id).events({ follow: Boolean(flags.follow), after: flags.after, pollIntervalMs: 500 })) show(e);
  return EXIT.ok;
}

export async function filesUpload(client: Silico, file: string, flags: { name?: string }, out: Out): Promise<number> {
  const f = await client.files.upload(file, flags.name ? { filename: flags.name } : {});
  out.result(f, () => `${f.file_id}  ${f.name}  ${f.format}  ${f.size_bytes} bytes  sha256 ${f.sha256}`);
  return EXIT.ok;
}

export async function filesDownload(client: Silico, id: string, dest: string | undefined, out: Out): Promise<number> {
  const target = dest ?? path.basename((await client.files.get(id)).name);
  const saved = await client.files.download(id, target);
  out.result(saved, () => `${saved.path}  ${saved.size_bytes} bytes  sha256 ${saved.sha256} (verified)`);
  return EXIT.ok;
}
