import type { Knex } from 'knex';

/**
 * Studies that answer questions (sensitivity, calibration). A study keeps its kind and its
 * approved design (`design`: ranges, method, seed, dataset version, budget) beside the arm
 * list, and its result (`analysis`) once found. Its runs are accepted, each with its
 * reservation, when it opens; a run receives its parameter set when the study's workflow
 * asks for it. `experiment_points` is that assignment and the optimizer's durable state:
 * one row per parameter set asked, with its batch, the run that executes it, the
 * optimizer's own attributes of that trial, and what the run told (`outcome`). A study
 * may be the subject of a passport.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('experiments', (t) => {
    t.text('kind').notNullable().defaultTo('arms');
    t.jsonb('design');
    t.jsonb('analysis');
  });
  await k.raw(`ALTER TABLE experiments ADD CONSTRAINT experiments_kind CHECK (kind IN ('arms', 'sensitivity', 'calibration'))`);
  await k.schema.createTable('experiment_points', (t) => {
    t.text('experiment_id').notNullable().references('experiments.id').onDelete('CASCADE');
    t.integer('idx').notNullable();
    t.integer('batch').notNullable();
    t.uuid('run_id').notNullable().unique().references('runs.id');
    t.jsonb('params').notNullable();
    t.jsonb('attrs').notNullable().defaultTo('{}');
    t.jsonb('outcome');
    t.timestamp('told_at', { useTz: true });
    t.primary(['experiment_id', 'idx']);
    t.index(['experiment_id', 'batch']);
  });
  await k.raw('ALTER TABLE passports DROP CONSTRAINT IF EXISTS passports_subject_kind_check');
  await k.raw(`ALTER TABLE passports ADD CONSTRAINT passports_subject_kind_check CHECK (subject_kind IN ('run', 'workspace_revision', 'experiment'))`);
  await k.schema.alterTable('passports', (t) => {
    t.text('experiment_id');
  });
}

export async function down(k: Knex): Promise<void> {
  await k('passports').where({ subject_kind: 'experiment' }).delete();
  await k.schema.alterTable('passports', (t) => {
    t.dropColumn('experiment_id');
  });
  await k.raw('ALTER TABLE passports DROP CONSTRAINT IF EXISTS passports_subject_kind_check');
  await k.raw(`ALTER TABLE passports ADD CONSTRAINT passports_subject_kind_check CHECK (subject_kind IN ('run', 'workspace_revision'))`);
  await k.schema.dropTableIfExists('experiment_points');
  await k.raw('ALTER TABLE experiments DROP CONSTRAINT IF EXISTS experiments_kind');
  await k.schema.alterTable('experiments', (t) => {
    t.dropColumn('kind');
    t.dropColumn('design');
    t.dropColumn('analysis');
  });
}
