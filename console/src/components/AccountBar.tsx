import { useEffect } from 'preact/hooks';
import { useLoad } from '../hooks.ts';
import { useSession } from '../api.ts';
import { usd } from '../format.ts';

interface AccountBody {
  account: { namespace: string; display_name: string };
  usage: { limits: { reads_per_minute: number; run_creation_per_minute: number; daily_requests_per_key: number; concurrent_runs: number }; requests_today: { this_key: number } };
  holdings: { compute: { available_usd: number; reserved_usd: number; spent_usd: number }; hosting: { hourly_usd: number } };
  spend_caps?: Record<'account' | 'key', { monthly_usd: number | null; per_run_usd: number | null; month_spent_usd: number }>;
}

/** The caps that apply, in words: "$50.00/month (spent $3.20), $2.00/run (this key)". */
function capsText(caps: NonNullable<AccountBody['spend_caps']>): string | null {
  const parts: string[] = [];
  for (const holder of ['account', 'key'] as const) {
    const c = caps[holder];
    if (c.monthly_usd !== null) parts.push(`${usd(c.monthly_usd)}/month, ${usd(c.month_spent_usd)} spent (${holder === 'key' ? 'this key' : 'account'})`);
    if (c.per_run_usd !== null) parts.push(`${usd(c.per_run_usd)}/run (${holder === 'key' ? 'this key' : 'account'})`);
  }
  return parts.length ? parts.join(' · ') : null;
}

/** Always on screen: whose account, what it can still spend, what is held for runs in flight, and its limits. */
export function AccountBar({ version }: { version: number }) {
  const { client, signOut } = useSession();
  const account = useLoad(() => client.account.get() as unknown as Promise<AccountBody>, [version]);
  useEffect(() => {
    const timer = setInterval(account.reload, 15_000);
    return () => clearInterval(timer);
  }, [account.reload]);
  const a = account.data;
  return (
    <section class="account" aria-label="Account">
      {a ? (
        <dl>
          <div><dt>Account</dt><dd>{a.account.namespace}</dd></div>
          <div><dt>Available</dt><dd data-testid="balance">{usd(a.holdings.compute.available_usd)}</dd></div>
          <div><dt>Reserved</dt><dd data-testid="reserved">{usd(a.holdings.compute.reserved_usd)}</dd></div>
          <div><dt>Spent</dt><dd>{usd(a.holdings.compute.spent_usd)}</dd></div>
          {a.holdings.hosting.hourly_usd > 0 ? <div><dt>Hosting</dt><dd>{usd(a.holdings.hosting.hourly_usd)}/h</dd></div> : null}
          {a.spend_caps && capsText(a.spend_caps) ? <div><dt>Spend caps</dt><dd data-testid="spend-caps">{capsText(a.spend_caps)}</dd></div> : null}
          <div><dt>Limits</dt><dd data-testid="limits">{a.usage.limits.concurrent_runs} concurrent runs · {a.usage.limits.run_creation_per_minute} runs/min · {a.usage.limits.reads_per_minute} reads/min · {a.usage.requests_today.this_key}/{a.usage.limits.daily_requests_per_key} requests today</dd></div>
        </dl>
      ) : <p>{account.error ? 'Account unavailable' : 'Loading account…'}</p>}
      <button type="button" class="secondary" onClick={signOut}>Sign out</button>
    </section>
  );
}
