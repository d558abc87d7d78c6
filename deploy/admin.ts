import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createDb, migrate, type Db } from '../storage/db/knex.ts';
import { addTeamMember, createAccount, findAccountByNamespace, listAccounts, ownerPrincipal, removeTeamMember, setFeature, setGateway, teamMembers, type AccountRow } from '../storage/db/accounts.ts';
import { setLabListing } from '../storage/db/labs.ts';
import { createKey, getKey, KEY_SCOPES, listKeys, revokeKey, rotateKey, SCOPES } from '../storage/db/apiKeys.ts';
import { getBalances, grantCompute, microsToUsd, usdToMicros } from '../storage/ledger.ts';
import { isoTime, newUuid } from '../storage/ids.ts';
import { REPO_ROOT } from './local/bootstrap.ts';
import semver from 'semver';
import { createGrant, getGrant, listGrants, revokeGrant, type GrantRow } from '../storage/db/publicationGrants.ts';
import { passportKeysDir, secretsKeyringOf } from '../kernel/config.ts';
import { secretsKeyFile } from './local/secretsKey.ts';
import { secretsKeyring } from '../kernel/sealedSecrets.ts';
import { rotatePassportKey } from '../storage/passportKeys.ts';
import { listPassportKeys, type PassportKeyRow } from '../storage/db/passports.ts';
import { HOSTING_USAGE, listForReview, reviewHosting } from './adminHosting.ts';
import { WEBHOOKS_USAGE, adminWebhooks } from './adminWebhooks.ts';
import { SHOW_USAGE, showEnvironment, showRecord } from './adminShow.ts';
import { stackSetting } from './localStackSetting.ts';
import { setSpendCaps, spendCaps } from '../storage/db/spendCaps.ts';
import { capView } from '../api/spendCaps.ts';

/**
 * Operator CLI: `npm run admin -- <group> <command> [options] [--json]`. Talks to
 * Postgres directly (DATABASE_URL, or the local stack's `.data/local.json`). A new key's
 * secret is printed once; only its SHA-256 is stored.
 */
const USAGE = `usage: npm run admin -- <command> [options] [--json]

  accounts create --namespace NS [--kind team|personal] [--name TEXT] [--gateway]
  accounts list
  accounts add-member --team NS --member NS      (the member account sees the team's \`team\` labs)
  accounts remove-member --team NS --member NS
  hub list|unlist --account NS --lab NAME        (Hub listing; visibility is the owner's, apart)
  keys create --account NS [--scopes all|a,b,...] [--expires ISO-TIME | --expires-in DAYS] [--name TEXT]
  keys list [--account NS]
  keys revoke KEY_ID
  keys rotate KEY_ID
  compute grant --account NS --usd AMOUNT [--ref TEXT]
  gateway on|off --account NS
  features set --account NS --flag NAME (--on | --off)
  grants create --account NS --lab NAME|* [--versions RANGE] [--expires ISO-TIME | --expires-in DAYS] [--note TEXT]
  grants list [--account NS]
  grants revoke GRANT_ID
  caps set --account NS [--key KEY_ID] [--monthly-usd X|none] [--per-run-usd X|none]   (spend caps of the account, or of one of its keys)
  caps show --account NS [--key KEY_ID]
  passport-keys list
  passport-keys rotate                           (a new signing key in the keyring; the old one is retired and keeps verifying)
${HOSTING_USAGE}
${WEBHOOKS_USAGE}
${SHOW_USAGE}

A grant (a workflow grant) lets the account's automated pipeline publish plans of that
lab whose version is in RANGE (semver, default *) with POST /v1/publications
{plan_id, grant_id} instead of approving each plan's digest.

scopes: ${SCOPES.join(', ')} (all), and compute:buy (buying compute: only when named)`;

class UsageError extends Error {}

/** The local stack's data dir (`npm start`), where its state and passport keyring live. */
const localDataDir = () => process.env.SILICO_DATA_DIR ?? path.join(REPO_ROOT, '.data');

/** The secrets keyring of SILICO_SECRETS_KEY, else the local stack's key (sealing webhook secrets). */
function secretsOrLocal() {
  const configured = secretsKeyringOf();
  if (configured) return configured;
  const file = secretsKeyFile(localDataDir());
  try {
    return secretsKeyring(readFileSync(file, 'utf8'), [], file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw new UsageError(`set SILICO_SECRETS_KEY (the service's), or start the local stack first (npm start) so ${file} exists`);
  }
}

function databaseUrl(): string {
  const url = stackSetting(localDataDir(), 'DATABASE_URL', 'database_url');
  if (!url) throw new UsageError(`set DATABASE_URL, or start the local stack first (npm start) so ${path.join(localDataDir(), 'local.json')} exists`);
  return url;
}

async function account(db: Db, ns: string | undefined): Promise<AccountRow> {
  if (!ns) throw new UsageError('--account NS is required');
  const a = await findAccountByNamespace(db, ns);
  if (!a) throw new UsageError(`no account with namespace ${ns}`);
  return a;
}

const keyView = (k: Awaited<ReturnType<typeof listKeys>>[number]) => ({
  key_id: k.id, account_id: k.account_id, prefix: k.prefix, client_id: k.client_id, scopes: k.scopes, name: k.name,
  expires_at: isoTime(k.expires_at), revoked_at: isoTime(k.revoked_at), rotated_from: k.rotated_from, created_at: isoTime(k.created_at),
});
const accountView = (a: AccountRow) => ({
  account_id: a.id, namespace: a.namespace, kind: a.kind, display_name: a.display_name, gateway_enabled: a.gateway_enabled, features: a.features, created_at: isoTime(a.created_at),
});

const grantView = (g: GrantRow) => ({
  grant_id: g.id, account_id: g.account_id, lab_name: g.lab_name, version_range: g.version_range, note: g.note,
  expires_at: isoTime(g.expires_at), revoked_at: isoTime(g.revoked_at), uses: g.uses, last_used_at: isoTime(g.last_used_at), created_at: isoTime(g.created_at),
});

const passportKeyView = (k: PassportKeyRow) => ({ key_id: k.key_id, alg: k.alg, created_at: isoTime(k.created_at), retired_at: isoTime(k.retired_at), public_key_pem: k.public_key_pem });

function expiry(v: Record<string, string | boolean | undefined>): Date | null {
  if (typeof v.expires === 'string') {
    const d = new Date(v.expires);
    if (Number.isNaN(d.getTime())) throw new UsageError('--expires must be an ISO 8601 time');
    return d;
  }
  if (typeof v['expires-in'] === 'string') {
    const days = Number(v['expires-in']);
    if (!(days > 0)) throw new UsageError('--expires-in must be a positive number of days');
    return new Date(Date.now() + days * 86400_000);
  }
  return null;
}

async function run(db: Db, argv: string[]): Promise<unknown> {
  const { values: v, positionals } = parseArgs({
    args: argv, allowPositionals: true, strict: true,
    options: {
      json: { type: 'boolean' }, namespace: { type: 'string' }, kind: { type: 'string' }, name: { type: 'string' },
      gateway: { type: 'boolean' }, account: { type: 'string' }, scopes: { type: 'string' }, expires: { type: 'string' },
      'expires-in': { type: 'string' }, usd: { type: 'string' }, ref: { type: 'string' }, flag: { type: 'string' },
      on: { type: 'boolean' }, off: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
      lab: { type: 'string' }, versions: { type: 'string' }, note: { type: 'string' },
      team: { type: 'string' }, member: { type: 'string' }, status: { type: 'string' },
      url: { type: 'string' }, events: { type: 'string' }, 'overlap-seconds': { type: 'string' },
      key: { type: 'string' }, 'monthly-usd': { type: 'string' }, 'per-run-usd': { type: 'string' },
    },
  });
  const [group, cmd, arg] = positionals;
  const what = `${group ?? ''} ${cmd ?? ''}`.trim();
  switch (what) {
    case 'accounts create': {
      if (!v.namespace) throw new UsageError('--namespace is required');
      const kind = (v.kind ?? 'personal') as 'team' | 'personal';
      if (!['team', 'personal'].includes(kind)) throw new UsageError('--kind must be team or personal');
      if (await findAccountByNamespace(db, v.namespace)) throw new UsageError(`namespace ${v.namespace} is taken`);
      const { account: a } = await createAccount(db, { namespace: v.namespace, kind, displayName: v.name, gatewayEnabled: Boolean(v.gateway) })
        .catch((err: Error) => { throw new UsageError(err.message); });
      return accountView(a);
    }
    case 'accounts list':
      return (await listAccounts(db)).map(accountView);
    case 'accounts add-member':
    case 'accounts remove-member': {
      if (!v.team || !v.member) throw new UsageError('--team NS and --member NS are required');
      const team = await account(db, v.team);
      const member = await account(db, v.member);
      if (team.kind !== 'team') throw new UsageError(`${team.namespace} is a ${team.kind} account; only a team has members`);
      if (team.id === member.id) throw new UsageError('an account is not a member of itself');
      if (cmd === 'add-member') await addTeamMember(db, team.id, member.id);
      else await removeTeamMember(db, team.id, member.id);
      return { team: team.namespace, members: await teamMembers(db, team.id) };
    }
    case 'hub list':
    case 'hub unlist': {
      const a = await account(db, v.account);
      if (!v.lab) throw new UsageError('--lab is required');
      const releases = await setLabListing(db, a.id, v.lab, cmd === 'list');
      return { lab: `${a.namespace}/${v.lab}`, hub_listed: cmd === 'list', releases };
    }
    case 'keys create': {
      const a = await account(db, v.account);
      const scopes = !v.scopes || v.scopes === 'all' ? [...SCOPES] : v.scopes.split(',').map((s) => s.trim()).filter(Boolean);
      const bad = scopes.filter((s) => !(KEY_SCOPES as readonly string[]).includes(s));
      if (bad.length) throw new UsageError(`unknown scopes: ${bad.join(', ')}`);
      const issued = await createKey(db, { accountId: a.id, principalId: await ownerPrincipal(db, a.id), scopes, expiresAt: expiry(v), name: v.name });
      return { api_key: issued.secret, ...keyView(issued.key), note: 'The key is shown once; store it now.' };
    }
    case 'keys list':
      return (await listKeys(db, v.account ? (await account(db, v.account)).id : undefined)).map(keyView);
    case 'keys revoke': {
      if (!arg) throw new UsageError('keys revoke KEY_ID');
      if (!(await getKey(db, arg))) throw new UsageError(`no key ${arg}`);
      await revokeKey(db, arg);
      return keyView((await getKey(db, arg))!);
    }
    case 'keys rotate': {
      if (!arg) throw new UsageError('keys rotate KEY_ID');
      const old = await getKey(db, arg);
      if (!old) throw new UsageError(`no key ${arg}`);
      if (old.revoked_at) throw new UsageError(`key ${arg} is revoked; create a new key instead`);
      const issued = await rotateKey(db, arg);
      return { api_key: issued.secret, ...keyView(issued.key), revoked: arg, note: 'The key is shown once; store it now.' };
    }
    case 'compute grant': {
      const a = await account(db, v.account);
      const usd = Number(v.usd);
      if (!v.usd || !(usd > 0)) throw new UsageError('--usd must be a positive amount');
      const ref = v.ref ?? `admin:${newUuid()}`;
      const recorded = await grantCompute(db, a.id, usdToMicros(usd), ref, 'operator grant');
      const b = await getBalances(db, a.id);
      return { namespace: a.namespace, granted_usd: recorded ? usd : 0, ref, already_recorded: !recorded, available_usd: microsToUsd(b.available_micros) };
    }
    case 'gateway on':
    case 'gateway off': {
      const a = await account(db, v.account);
      await setGateway(db, a.id, cmd === 'on');
      return accountView((await findAccountByNamespace(db, a.namespace))!);
    }
    case 'features set': {
      const a = await account(db, v.account);
      if (!v.flag) throw new UsageError('--flag is required');
      if (Boolean(v.on) === Boolean(v.off)) throw new UsageError('give exactly one of --on or --off');
      await setFeature(db, a.id, v.flag, Boolean(v.on));
      return accountView((await findAccountByNamespace(db, a.namespace))!);
    }
    case 'grants create': {
      const a = await account(db, v.account);
      if (!v.lab || !(v.lab === '*' || /^[a-z][a-z0-9-]{0,62}$/.test(v.lab))) throw new UsageError('--lab must be a lab name or *');
      const range = v.versions ?? '*';
      if (!semver.validRange(range)) throw new UsageError(`--versions ${range} is not a semver range`);
      return grantView(await createGrant(db, { accountId: a.id, labName: v.lab, versionRange: range, note: v.note, expiresAt: expiry(v) }));
    }
    case 'grants list':
      return (await listGrants(db, v.account ? (await account(db, v.account)).id : undefined)).map(grantView);
    case 'grants revoke': {
      if (!arg) throw new UsageError('grants revoke GRANT_ID');
      if (!(await getGrant(db, arg))) throw new UsageError(`no grant ${arg}`);
      await revokeGrant(db, arg);
      return grantView((await getGrant(db, arg))!);
    }
    case 'passport-keys list':
      return (await listPassportKeys(db)).map(passportKeyView);
    case 'passport-keys rotate': {
      // The configured keyring (SILICO_PASSPORT_KEYS_DIR), else the local stack's; workers read the same one.
      const dir = passportKeysDir() ?? path.join(localDataDir(), 'passport-keys');
      const key = await rotatePassportKey(db, dir);
      return { ...passportKeyView((await listPassportKeys(db)).find((k) => k.key_id === key.keyId)!), keyring: dir, note: 'New passports are signed with this key; the previous one is retired and keeps verifying.' };
    }
    case 'hosting list':
      return listForReview(db, v.status);
    case 'hosting approve':
    case 'hosting reject': {
      if (!arg) throw new UsageError(`hosting ${cmd} LAB_ID`);
      return reviewHosting(localDataDir(), arg, { decision: cmd === 'approve' ? 'approve' : 'reject', actor: `operator:${process.env.USER ?? 'admin'}`, note: typeof v.note === 'string' ? v.note : undefined });
    }
    case 'caps set':
    case 'caps show': {
      const a = await account(db, v.account);
      const keyId = v.key ?? (await listKeys(db, a.id))[0]?.id;
      if (v.key && !(await listKeys(db, a.id)).some((k) => k.id === v.key)) throw new UsageError(`no key ${v.key} of ${a.namespace}`);
      if (cmd === 'set') {
        const amount = (name: string, raw: string | undefined): number | null | undefined => {
          if (raw === undefined) return undefined;
          if (raw === 'none') return null;
          const usd = Number(raw);
          if (!Number.isFinite(usd) || usd < 0) throw new UsageError(`--${name} must be a non-negative amount in USD, or none`);
          return usdToMicros(usd);
        };
        const caps = { monthly_micros: amount('monthly-usd', v['monthly-usd']), run_micros: amount('per-run-usd', v['per-run-usd']) };
        if (caps.monthly_micros === undefined && caps.run_micros === undefined) throw new UsageError('caps set needs --monthly-usd and/or --per-run-usd');
        await setSpendCaps(db, v.key ? { keyId: v.key } : { accountId: a.id }, caps);
      }
      const c = keyId ? await spendCaps(db, { accountId: a.id, keyId }, { spent: 'always' }) : null;
      return { account: a.namespace, ...(c ? { account_caps: capView(c.account), ...(v.key ? { key_id: v.key, key_caps: capView(c.key) } : {}) } : {}) };
    }
    case 'webhooks add':
    case 'webhooks list':
    case 'webhooks rotate-secret':
    case 'webhooks remove':
    case 'webhooks deliveries':
    case 'webhooks replay': {
      const a = await account(db, v.account);
      return adminWebhooks(db, secretsOrLocal, cmd!, arg, { accountId: a.id, url: v.url, events: v.events, note: v.note, overlapSeconds: v['overlap-seconds'], status: v.status }, (m) => new UsageError(m));
    }
    case 'runs show':
    case 'studies show':
    case 'hosting show':
    case 'invocations show':
    case 'sessions show':
    case 'purchases show':
      return showRecord(db, localDataDir(), group!, arg, (m) => new UsageError(m));
    case 'environments show':
      return showEnvironment(db, arg, (m) => new UsageError(m));
    default:
      throw new UsageError(what ? `unknown command: ${what}` : 'no command given');
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const json = argv.includes('--json');
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  let db: Db | undefined;
  try {
    db = createDb(databaseUrl(), { poolMax: 2 });
    await migrate(db);
    const out = await run(db, argv);
    console.log(json ? JSON.stringify(out, null, 2) : formatText(out));
    return 0;
  } catch (err) {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    const message = (err as Error).message;
    if (json) console.error(JSON.stringify({ error: { message, usage: usage ? USAGE : undefined } }));
    else console.error(`admin: ${message}${usage ? `\n\n${USAGE}` : ''}`);
    return usage ? 2 : 1;
  } finally {
    await db?.destroy();
  }
}

function formatText(out: unknown): string {
  const rows = Array.isArray(out) ? out : [out];
  return rows.map((r) => Object.entries(r as Record<string, unknown>).map(([k, val]) => `${k.padEnd(16)} ${typeof val === 'object' ? JSON.stringify(val) : String(val)}`).join('\n')).join('\n\n');
}

process.exitCode = await main();
