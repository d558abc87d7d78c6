import type { Knex } from 'knex';

/** Accounts, keys, ledger, compute profiles, releases, skills, idempotency and rate limits. */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('accounts', (t) => {
    t.text('id').primary();
    t.text('namespace').notNullable().unique();
    t.text('kind').notNullable().checkIn(['personal', 'team']);
    t.text('display_name').notNullable();
    t.boolean('gateway_enabled').notNullable().defaultTo(false);
    t.jsonb('features').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
  });
  await k.schema.createTable('principals', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('name').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
  });
  await k.schema.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('principal_id').notNullable().references('principals.id');
    t.text('client_id').notNullable();
    t.text('prefix').notNullable();
    t.text('key_sha256').notNullable().unique();
    t.specificType('scopes', 'text[]').notNullable();
    t.text('name');
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.text('rotated_from').references('api_keys.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.index(['account_id']);
  });
  // Balances are a materialised view of the ledger kept in the same transaction, so a
  // reservation is one conditional UPDATE; the CHECKs make a negative balance impossible.
  await k.schema.createTable('compute_balances', (t) => {
    t.text('account_id').primary().references('accounts.id');
    t.bigInteger('available_micros').notNullable().defaultTo(0);
    t.bigInteger('reserved_micros').notNullable().defaultTo(0);
    t.bigInteger('spent_micros').notNullable().defaultTo(0);
  });
  await k.raw(`ALTER TABLE compute_balances
    ADD CONSTRAINT available_non_negative CHECK (available_micros >= 0),
    ADD CONSTRAINT reserved_non_negative CHECK (reserved_micros >= 0),
    ADD CONSTRAINT spent_non_negative CHECK (spent_micros >= 0)`);
  await k.schema.createTable('ledger_txns', (t) => {
    t.bigIncrements('id');
    t.text('account_id').notNullable().references('accounts.id');
    t.text('kind').notNullable();
    t.text('ref').notNullable();
    t.text('memo');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.unique(['kind', 'ref']);
  });
  await k.schema.createTable('ledger_entries', (t) => {
    t.bigIncrements('id');
    t.bigInteger('txn_id').notNullable().references('ledger_txns.id');
    t.text('account_id').notNullable().references('accounts.id');
    t.text('book').notNullable().checkIn(['funding', 'available', 'reserved', 'spent']);
    t.bigInteger('amount_micros').notNullable();
    t.index(['txn_id']);
  });
  await k.schema.createTable('compute_profiles', (t) => {
    t.text('id').primary();
    t.text('title').notNullable();
    t.text('kind').notNullable().checkIn(['cpu', 'gpu']);
    t.integer('vcpus').notNullable();
    t.integer('memory_mib').notNullable();
    t.text('gpu');
    t.integer('price_per_second_micros').notNullable();
    t.integer('max_runtime_seconds').notNullable();
    t.integer('schedule_to_start_seconds').notNullable();
    t.integer('sort').notNullable();
  });
  await k('compute_profiles').insert([
    { id: 'cpu-small', title: 'CPU small (1 vCPU, 1 GiB)', kind: 'cpu', vcpus: 1, memory_mib: 1024, gpu: null, price_per_second_micros: 10, max_runtime_seconds: 3600, schedule_to_start_seconds: 600, sort: 1 },
    { id: 'cpu-standard', title: 'CPU standard (2 vCPU, 4 GiB)', kind: 'cpu', vcpus: 2, memory_mib: 4096, gpu: null, price_per_second_micros: 40, max_runtime_seconds: 3600 * 6, schedule_to_start_seconds: 600, sort: 2 },
    { id: 'gpu-h100', title: 'GPU H100 (8 vCPU, 64 GiB, 1x H100)', kind: 'gpu', vcpus: 8, memory_mib: 65536, gpu: 'nvidia-h100-80gb', price_per_second_micros: 1000, max_runtime_seconds: 3600 * 6, schedule_to_start_seconds: 120, sort: 3 },
  ]);
  await k.schema.createTable('releases', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('namespace').notNullable();
    t.text('name').notNullable();
    t.text('version').notNullable();
    t.text('title').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.text('package_type').notNullable().defaultTo('lab').checkIn(['lab', 'model']);
    t.jsonb('manifest').notNullable();
    t.jsonb('inputs').notNullable();
    t.jsonb('outputs').notNullable();
    t.text('package_sha256').notNullable();
    t.text('archive_key');
    t.text('visibility').notNullable().defaultTo('private').checkIn(['private', 'team', 'public']);
    t.specificType('tags', 'text[]').notNullable().defaultTo('{}');
    t.text('intended_use');
    t.text('compute_class').notNullable().defaultTo('cpu');
    t.text('qualification_state').notNullable().defaultTo('unqualified');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.unique(['namespace', 'name', 'version']);
    t.index(['account_id']);
  });
  await k.schema.createTable('skills', (t) => {
    t.text('name').primary();
    t.text('version').notNullable();
    t.text('summary').notNullable();
    t.jsonb('manifest').notNullable();
    t.text('checksum').notNullable();
    t.timestamp('published_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
  });
  await k.schema.createTable('idempotency_keys', (t) => {
    t.text('account_id').notNullable().references('accounts.id');
    t.text('key').notNullable();
    t.text('route').notNullable();
    t.text('request_sha256').notNullable();
    t.text('state').notNullable().checkIn(['in_progress', 'completed']);
    t.integer('response_status');
    t.jsonb('response_body');
    t.timestamp('locked_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.primary(['account_id', 'key']);
    t.index(['created_at']);
  });
  // Fixed-window rate-limit counters (storage/db/rateLimits.ts).
  await k.raw(`CREATE TABLE rate_limits (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)`);
}

export async function down(k: Knex): Promise<void> {
  for (const t of ['rate_limits', 'idempotency_keys', 'skills', 'releases', 'compute_profiles', 'ledger_entries', 'ledger_txns', 'compute_balances', 'api_keys', 'principals', 'accounts']) {
    await k.schema.dropTableIfExists(t);
  }
}
