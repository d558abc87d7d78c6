import { arr, nullableStr, obj, str, time, uuid, type JsonSchema } from './common.ts';
import { CHECKS } from '../../storage/passportDocument.ts';

/** One check of a passport: a status of its own and its evidence; there is no overall score. */
const check = obj({
  check: { enum: [...CHECKS] },
  status: { enum: ['passed', 'failed', 'not_applicable', 'unknown'] },
  evidence: { type: 'object' },
  checked_at: time,
}, ['check', 'status', 'evidence', 'checked_at']);

/** A signed passport, as stored and served (the envelope's fields sit beside these, unsigned). */
export const passport: JsonSchema = obj({
  object: { const: 'passport' },
  passport_id: str(64),
  subject: {
    description: 'What the passport is of: a run, a study, or a workspace revision (digests as they were when it was built).',
    oneOf: [
      obj({ kind: { const: 'run' }, run_id: uuid, resolved_ref: nullableStr(300), package_sha256: nullableStr(80) }, ['kind', 'run_id', 'resolved_ref', 'package_sha256']),
      obj({ kind: { const: 'workspace_revision' }, workspace_id: uuid, revision_id: uuid, tree_sha256: nullableStr(80) }, ['kind', 'workspace_id', 'revision_id', 'tree_sha256']),
      obj({
        kind: { const: 'experiment' }, experiment_id: str(64), study_kind: { enum: ['arms', 'sensitivity', 'calibration', 'petab_calibration'] },
        design_sha256: { ...nullableStr(80), description: 'SHA-256 of the RFC 8785 canonical JSON of the approved design (null for a study of arms).' },
      }, ['kind', 'experiment_id', 'study_kind', 'design_sha256']),
    ],
  },
  checks: arr(check, { minItems: CHECKS.length, maxItems: CHECKS.length }),
  created_at: time,
  key_id: str(64),
  signature: obj({
    alg: { const: 'Ed25519' }, key_id: str(64),
    value: str(200, { description: 'base64 Ed25519 signature of the RFC 8785 canonical JSON of the passport without `signature`' }),
  }, ['alg', 'key_id', 'value']),
}, ['object', 'passport_id', 'subject', 'checks', 'created_at', 'key_id', 'signature']);

/** A public key of passports: retired keys stay listed so what they signed stays verifiable. */
export const passportKey: JsonSchema = obj({
  key_id: str(64), alg: { const: 'Ed25519' }, public_key_pem: str(1000), created_at: time, retired_at: { type: ['string', 'null'], format: 'date-time' },
}, ['key_id', 'alg', 'public_key_pem', 'created_at', 'retired_at']);
