import type { ToolDef } from '../tools/tool.ts';
import { capView } from '../spendCaps.ts';
import { record, str, id, time, arr, nullableTime, usd, count } from '../schemas/common.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { accountSummary } from '../../storage/db/accountSummary.ts';
import { dailyRequests, utcDay } from '../../storage/db/rateLimits.ts';
import { isoTime } from '../../storage/ids.ts';

const usdOrNull = { type: ['number', 'null'] };
/** One holder's caps (null: none) and what it spent this UTC month. */
const CAP_VIEW = record({ monthly_usd: usdOrNull, per_run_usd: usdOrNull, month_spent_usd: usdOrNull });

export const accountGet: ToolDef = {
  name: 'account_get',
  description: 'Describe the connected account (personal or team): namespace, access of this key, usage today and holdings.',
  scope: 'any',
  readOnly: true,
  input: {},
  output: record({
    object: { const: 'account' },
    account: record({
      id: id('acct'), namespace: str(), kind: { enum: ['personal', 'team'] }, display_name: str(), gateway_enabled: { type: 'boolean' },
      features: { type: 'object', additionalProperties: { type: 'boolean' }, description: 'Features an operator enabled for the account (e.g. `zip_member_import`).' },
      created_at: time,
    }),
    access: record({ key_id: id('key'), key_prefix: str(), client_id: id('cli'), scopes: arr(str()), expires_at: nullableTime, created_at: time }),
    usage: record({
      day: { type: 'string', format: 'date', description: 'The UTC day the counts are of.' },
      requests_today: record({ this_key: count, account: count }),
      limits: record({ reads_per_minute: count, run_creation_per_minute: count, daily_requests_per_key: count, concurrent_runs: count }),
    }),
    holdings: record({
      compute: record({
        available_usd: { ...usd, description: 'Usable now: granted or purchased compute, less what is reserved and spent.' },
        reserved_usd: { ...usd, description: 'Held by runs and invocations that have not ended.' },
        spent_usd: usd,
      }),
      releases: { ...count, description: 'Releases this account has published.' },
      hosting: record({ hourly_usd: { ...usd, description: 'What ready deployments cost per hour, charged to their owner.' }, spent_usd: usd }),
    }),
    spend_caps: record({ account: CAP_VIEW, key: CAP_VIEW }, [], { description: 'The account\'s and this key\'s caps (null: none) and what runs cost them this month (UTC).' }),
  }),
  async handler(_input, { deps, caller, requestsToday }) {
    const { account, key } = caller;
    const day = utcDay();
    // This key's count is the rate limiter's for this request, where it counted it; the
    // other keys' are read.
    const [s, thisKey] = await Promise.all([
      accountSummary(deps.pool, account.id, key.id, day),
      requestsToday ? requestsToday() : dailyRequests(deps.pool, key.id, day),
    ]);
    const lim = deps.config.limits;
    return {
      body: {
        object: 'account',
        account: {
          id: account.id, namespace: account.namespace, kind: account.kind, display_name: account.display_name,
          gateway_enabled: account.gateway_enabled, features: account.features, created_at: isoTime(account.created_at),
        },
        access: {
          key_id: key.id, key_prefix: key.prefix, client_id: key.client_id, scopes: key.scopes,
          expires_at: isoTime(key.expires_at), created_at: isoTime(key.created_at),
        },
        usage: {
          day,
          requests_today: { this_key: thisKey, account: s.requests_today_other_keys + thisKey },
          limits: {
            reads_per_minute: lim.readsPerMinute,
            run_creation_per_minute: lim.runCreationPerMinute,
            daily_requests_per_key: lim.dailyRequests,
            concurrent_runs: lim.concurrentRunsPerAccount,
          },
        },
        holdings: {
          compute: {
            available_usd: microsToUsd(s.available_micros),
            reserved_usd: microsToUsd(s.reserved_micros),
            spent_usd: microsToUsd(s.spent_micros),
          },
          releases: s.releases,
          // Ready deployments' warm instances are charged hourly to their owner while ready.
          hosting: { hourly_usd: microsToUsd(s.hosting_hourly_micros), spent_usd: microsToUsd(s.hosting_spent_micros) },
        },
        // The account's and this key's caps (null: none) and what runs cost them this month (UTC).
        spend_caps: { account: capView(s.caps.account), key: capView(s.caps.key) },
      },
      next_actions: [
        { tool: 'compute_profile_list', description: 'See the compute profiles runs can use and their prices.', arguments: {} },
        { tool: 'capability_list', description: 'List runnable lab versions with their input and output contracts.', arguments: {} },
      ],
    };
  },
};

