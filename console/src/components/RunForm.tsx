/**
 * A run form generated from a release's input contract. Nothing is checked here: the
 * plan (POST /run-plans) is the judge, and its error envelope or findings are shown on
 * the field they name. The plan's price and findings are shown for approval; only
 * approving starts the run (POST /runs with the plan's id and digest).
 */
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, type RunPlan } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { boundsText, parseInputText, type DeclaredInput } from '../contract.ts';
import { ErrorNotice } from './ErrorNotice.tsx';
import { usd, valueText, when } from '../format.ts';

type FieldErrors = Record<string, string>;

interface Profile { id: string; title: string; price_per_second_usd: number; max_runtime_seconds: number; availability: string }

function Field({ id, label, hint, error, children }: { id: string; label: string; hint?: string; error?: string; children: preact.ComponentChildren }) {
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>{label}</label>
      {children}
      {hint ? <p id={`${id}-hint`} class="hint">{hint}</p> : null}
      {error ? <p id={`${id}-error`} class="field-error" role="alert">{error}</p> : null}
    </div>
  );
}

export function RunForm({ reference, inputs }: { reference: string; inputs: DeclaredInput[] }) {
  const { client, refreshAccount } = useSession();
  const { route } = useLocation();
  const profiles = useLoad(async () => (await client.computeProfiles.list()).items as unknown as Profile[], []);
  const [values, setValues] = useState<Record<string, string>>({});
  const [profile, setProfile] = useState('');
  const [maxRuntime, setMaxRuntime] = useState('');
  const [seed, setSeed] = useState('');
  const [reuse, setReuse] = useState(false);
  const [fieldErrors, setFieldErrors] = useState<FieldErrors>({});
  const [error, setError] = useState<unknown>(null);
  const [plan, setPlan] = useState<RunPlan | null>(null);
  const [busy, setBusy] = useState(false);

  const numberOrText = (t: string) => (t.trim() !== '' && Number.isFinite(Number(t)) ? Number(t) : t.trim());
  const check = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setFieldErrors({});
    setPlan(null);
    const body: Record<string, unknown> = { capability_ref: reference, inputs: {} };
    for (const input of inputs) {
      const text = values[input.name];
      if (text !== undefined && text.trim() !== '') (body.inputs as Record<string, unknown>)[input.name] = parseInputText(input, text);
    }
    if (profile) body.compute_profile_id = profile;
    if (maxRuntime.trim()) body.max_runtime_seconds = numberOrText(maxRuntime);
    if (seed.trim()) body.seed = numberOrText(seed);
    if (reuse) body.reuse = true;
    try {
      const p = await client.runs.prepare(body as never);
      setPlan(p);
      const errs: FieldErrors = {};
      for (const f of p.findings) if (f.path && f.severity !== 'info') errs[f.path] = f.message;
      setFieldErrors(errs);
    } catch (err) {
      if (err instanceof ApiError && err.param) setFieldErrors({ [err.param]: err.message });
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const approve = async () => {
    if (!plan) return;
    setBusy(true);
    setError(null);
    try {
      const run = await client.runs.create({ plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 });
      refreshAccount();
      route(`/console/runs/${run.id}`);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  const errorFor = (param: string) => fieldErrors[param] ?? Object.entries(fieldErrors).find(([k]) => k.startsWith(`${param}/`) || k.startsWith(`${param}.`))?.[1];
  const described = (id: string, hint: boolean, err: string | undefined) => [hint ? `${id}-hint` : '', err ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;

  return (
    <section aria-labelledby="run-form-title">
      <h2 id="run-form-title">Run it</h2>
      <form noValidate onSubmit={check} onInput={() => setPlan(null)}>
        {inputs.map((input) => {
          const id = `input-${input.name}`;
          const err = errorFor(`inputs.${input.name}`);
          const hint = [input.description, input.units ? `Units: ${input.units}` : null, input.schema ? `Bounds: ${boundsText(input.schema)}` : null, input.default !== null ? `Default: ${valueText(input.default)}` : null].filter(Boolean).join(' · ');
          const label = `${input.name}${input.units ? ` (${input.units})` : ''}${input.required ? ' — required' : ''}`;
          const common = { id, name: input.name, 'aria-invalid': err ? true : undefined, 'aria-describedby': described(id, hint !== '', err) };
          const enumValues = Array.isArray(input.schema?.enum) ? input.schema.enum as unknown[] : null;
          return (
            <Field key={input.name} id={id} label={label} hint={hint || undefined} error={err}>
              {enumValues ? (
                <select {...common} value={values[input.name] ?? ''} onChange={(e) => setValues({ ...values, [input.name]: e.currentTarget.value })}>
                  <option value="">(default)</option>
                  {enumValues.map((v) => <option key={String(v)} value={typeof v === 'string' ? v : JSON.stringify(v)}>{valueText(v)}</option>)}
                </select>
              ) : ['number', 'integer', 'string', 'boolean'].includes(input.value_type) ? (
                <input {...common} type="text" inputMode={input.value_type === 'string' || input.value_type === 'boolean' ? undefined : 'decimal'} placeholder={input.default !== null ? valueText(input.default) : ''} value={values[input.name] ?? ''} onInput={(e) => setValues({ ...values, [input.name]: e.currentTarget.value })} />
              ) : (
                <textarea {...common} rows={3} placeholder={`${input.value_type} as JSON`} value={values[input.name] ?? ''} onInput={(e) => setValues({ ...values, [input.name]: e.currentTarget.value })} />
              )}
            </Field>
          );
        })}
        <fieldset>
          <legend>Compute</legend>
          <Field id="compute-profile" label="Compute profile" error={errorFor('compute_profile_id')}>
            <select id="compute-profile" value={profile} onChange={(e) => setProfile(e.currentTarget.value)} aria-invalid={errorFor('compute_profile_id') ? true : undefined} aria-describedby={described('compute-profile', false, errorFor('compute_profile_id'))}>
              <option value="">(default: cpu-small)</option>
              {(profiles.data ?? []).map((p) => <option key={p.id} value={p.id} disabled={p.availability === 'unavailable'}>{p.title} — {usd(p.price_per_second_usd)}/s, up to {p.max_runtime_seconds} s</option>)}
            </select>
          </Field>
          <Field id="max-runtime" label="Max runtime (seconds)" hint="The run is stopped and charged for its time if it runs longer; the price is reserved for this long." error={errorFor('max_runtime_seconds')}>
            <input id="max-runtime" type="text" inputMode="numeric" value={maxRuntime} onInput={(e) => setMaxRuntime(e.currentTarget.value)} aria-invalid={errorFor('max_runtime_seconds') ? true : undefined} aria-describedby={described('max-runtime', true, errorFor('max_runtime_seconds'))} />
          </Field>
          <Field id="seed" label="Seed" hint="Fix it to repeat a stochastic run exactly." error={errorFor('seed')}>
            <input id="seed" type="text" inputMode="numeric" value={seed} onInput={(e) => setSeed(e.currentTarget.value)} aria-invalid={errorFor('seed') ? true : undefined} aria-describedby={described('seed', true, errorFor('seed'))} />
          </Field>
          <div class="field">
            <label><input type="checkbox" checked={reuse} onChange={(e) => setReuse(e.currentTarget.checked)} /> Answer from an identical completed run of mine, at no cost</label>
            <p class="hint">The same package, inputs, seed, compute profile and runtime: its results are this run's, and nothing runs.</p>
          </div>
        </fieldset>
        <button type="submit" disabled={busy}>Check the run</button>
      </form>
      <ErrorNotice error={error} />
      {plan ? (
        <section class="plan" aria-labelledby="plan-title">
          <h3 id="plan-title">Plan {plan.status === 'ready' ? 'ready for approval' : 'blocked'}</h3>
          <dl class="facts">
            <div><dt>Estimated maximum</dt><dd data-testid="plan-price">{usd(plan.estimated_max_usd)}</dd></div>
            <div><dt>Release</dt><dd><code>{plan.resolved_ref}</code></dd></div>
            <div><dt>Package</dt><dd><code>{plan.package_sha256}</code></dd></div>
            <div><dt>Compute</dt><dd>{plan.compute_profile}, up to {plan.max_runtime_seconds} s</dd></div>
            {plan.reuse_of ? <div><dt>Answered from</dt><dd><a href={`/console/runs/${plan.reuse_of.run_id}`}><code>{plan.reuse_of.run_id}</code></a></dd></div> : null}
            <div><dt>Plan digest</dt><dd><code>{plan.plan_sha256}</code></dd></div>
            <div><dt>Expires</dt><dd>{when(plan.expires_at)}</dd></div>
          </dl>
          {plan.findings.length ? (
            <ul class="findings" aria-label="Findings">
              {plan.findings.map((f, i) => <li key={i} class={`finding ${f.severity}`}><strong>{f.severity}</strong> <code>{f.code}</code>{f.path ? <> on <code>{f.path}</code></> : null}: {f.message}</li>)}
            </ul>
          ) : <p>No findings.</p>}
          <button type="button" onClick={approve} disabled={busy || plan.status !== 'ready'}>Approve and run for up to {usd(plan.estimated_max_usd)}</button>
        </section>
      ) : null}
    </section>
  );
}
