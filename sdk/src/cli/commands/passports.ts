import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Silico } from '../../client.ts';
import { passportOf, passportSignedText, verifyPassport, type PassportKey, type SignedPassport } from '../../passportVerify.ts';
import { EXIT, UsageError, table, type Out } from '../output.ts';

/** `silico passport get|verify`: fetch a passport, write it (and openssl's inputs), check its signature offline. */

export interface PassportGetFlags { run?: string; workspace?: string; revision?: string; id?: string; out?: string; opensslDir?: string }

/** The one subject the flags name, as GET /passports parameters. */
function subjectParams(f: PassportGetFlags): Record<string, string> {
  if (f.id && !f.run && !f.workspace && !f.revision) return { passport_id: f.id };
  if (f.run && !f.id && !f.workspace && !f.revision) return { run_id: f.run };
  if (f.workspace && f.revision && !f.id && !f.run) return { workspace_id: f.workspace, revision_id: f.revision };
  throw new UsageError('give exactly one of --run ID, --workspace ID --revision ID, or --id pp_...');
}

const summary = (p: SignedPassport) => [
  `passport  ${p.passport_id}  (signed by ${p.key_id}; no overall score: each check stands alone)`,
  table((p.checks as Array<Record<string, unknown>>).map((c) => ({ check: c.check, status: c.status })), ['check', 'status']),
].join('\n');

/**
 * What `openssl pkeyutl -verify -pubin -inkey key.pem -rawin -in passport.canonical.json
 * -sigfile passport.sig` needs, in `dir`: the exact signed bytes, the raw signature and
 * the signing key's PEM (with the passport itself beside them).
 */
async function writeOpensslFiles(dir: string, p: SignedPassport, keys: readonly PassportKey[]): Promise<void> {
  const key = keys.find((k) => k.key_id === p.signature.key_id);
  if (!key) throw new UsageError(`no public key ${p.signature.key_id} among the service's keys`);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'passport.json'), `${JSON.stringify(p, null, 2)}\n`);
  await writeFile(path.join(dir, 'passport.canonical.json'), passportSignedText(p));
  await writeFile(path.join(dir, 'passport.sig'), Buffer.from(p.signature.value, 'base64'));
  await writeFile(path.join(dir, 'key.pem'), key.public_key_pem);
}

export async function passportGet(client: Silico, flags: PassportGetFlags, out: Out): Promise<number> {
  const p = passportOf(await client.passports.get(subjectParams(flags)) as Record<string, unknown>);
  if (flags.out) {
    await mkdir(path.dirname(path.resolve(flags.out)), { recursive: true });
    await writeFile(flags.out, `${JSON.stringify(p, null, 2)}\n`);
    out.note(`wrote ${flags.out}`);
  }
  if (flags.opensslDir) {
    await writeOpensslFiles(flags.opensslDir, p, (await client.passports.keys()).items as PassportKey[]);
    out.note(`wrote passport.json, passport.canonical.json, passport.sig and key.pem to ${flags.opensslDir}`);
  }
  out.result(p, () => summary(p));
  return EXIT.ok;
}

/** Keys from a file: the body of GET /passports/keys, or its `items` array. */
async function keysFile(file: string): Promise<PassportKey[]> {
  const parsed = JSON.parse(await readFile(file, 'utf8')) as PassportKey[] | { items: PassportKey[] };
  return Array.isArray(parsed) ? parsed : parsed.items;
}

/** Exit 0 when the signature verifies, 1 when it does not. Keys from `--keys FILE` (offline) or the service. */
export async function passportVerify(file: string, keys: { file?: string; client?: () => Silico }, out: Out): Promise<number> {
  let passport: SignedPassport;
  try {
    passport = passportOf(JSON.parse(await readFile(file, 'utf8')));
  } catch (err) {
    throw new UsageError(`${file} is not a passport's JSON: ${(err as Error).message}`);
  }
  const list = keys.file ? await keysFile(keys.file) : (await keys.client!().passports.keys()).items as PassportKey[];
  const result = verifyPassport(passport, list);
  out.result({ passport_id: passport.passport_id, ...result }, () => (result.valid
    ? `verified: passport ${passport.passport_id} is signed by ${result.key_id}`
    : `NOT verified: passport ${String(passport.passport_id)}: ${result.reason}`));
  return result.valid ? EXIT.ok : EXIT.runFailed;
}
