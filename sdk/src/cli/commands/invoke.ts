import type { Silico } from '../../client.ts';
import { EXIT, UsageError, parsePairs, table, type Out } from '../output.ts';

/** `silico invoke REF --input k=v`: one invocation of a hosted release, planned, executed and waited for. */

export interface InvokeFlags { sha256?: string; input: string[]; seed?: number; timeoutMs?: number }

export async function invokeCommand(client: Silico, reference: string, flags: InvokeFlags, out: Out): Promise<number> {
  if (!reference.includes('@')) throw new UsageError('give the exact release: <namespace>/<name>@<version>');
  // The digest pins the exact bytes: given, or the hosted release's own (read from the Hub).
  const sha256 = flags.sha256 ?? (await client.hub.inspect(reference)).package_sha256.replace(/^sha256:/, '');
  const plan = await client.hostedInvocations.prepare({ reference, sha256, inputs: parsePairs(flags.input, '--input', true), ...(flags.seed === undefined ? {} : { seed: flags.seed }) } as never) as unknown as Record<string, unknown>;
  if (plan.status !== 'ready') {
    out.result(plan, () => `The invocation plan is ${String(plan.status)}:\n${table((plan.findings as Array<Record<string, unknown>>) ?? [], ['severity', 'code', 'message'])}`);
    return EXIT.usage;
  }
  const started = await client.hostedInvocations.execute({ plan_id: String(plan.plan_id), plan_sha256: String(plan.plan_sha256) });
  const inv = await client.hostedInvocations.wait(started.invocation_id, { timeoutMs: flags.timeoutMs });
  const outputs = Object.entries(inv.outputs ?? {}).map(([name, value]) => ({ output: name, value: typeof value === 'object' ? JSON.stringify(value) : String(value) }));
  out.result(inv, () => [
    `invocation ${inv.invocation_id}  ${inv.status}${inv.error ? `  ${inv.error.code}: ${inv.error.message}` : ''}  charged $${inv.credits_settled ?? 0}`,
    outputs.length ? table(outputs, ['output', 'value']) : '',
    inv.artifacts?.length ? table(inv.artifacts.map((a) => ({ port: a.port, file: a.file_name, bytes: a.size_bytes, sha256: a.sha256 })), ['port', 'file', 'bytes', 'sha256']) : '',
  ].filter(Boolean).join('\n'));
  return inv.status === 'completed' ? EXIT.ok : EXIT.runFailed;
}
