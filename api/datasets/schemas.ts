import { arr, count, nullableTime, obj, sha256Hex, str, time, uuid, type JsonSchema } from '../schemas/common.ts';

/** One member of a dataset version: a retained file, its sample and group, its role and split. */
export const member: JsonSchema = obj({
  file_id: uuid, sha256: sha256Hex, size_bytes: count, sample_id: str(200, { minLength: 1 }),
  group_id: str(200, { minLength: 1 }), role: { enum: ['image', 'label', 'mask', 'sequence', 'structure', 'table', 'other'] },
  split: { enum: ['train', 'validation', 'test'] },
}, ['file_id', 'sha256', 'size_bytes', 'sample_id', 'group_id', 'role', 'split']);

/** What `manifest_sha256` digests (RFC 8785 canonical JSON): the registration's fields and its members, sorted. */
const manifest: JsonSchema = obj({
  name: str(200), source: str(500), license: str(100), attribution: str(1000), annotation_version: str(100), members: arr(member),
}, ['name', 'source', 'license', 'attribution', 'annotation_version', 'members']);

/** A member whose stored bytes are not what it declared: why the version failed. */
const mismatch: JsonSchema = obj({ file_id: uuid, problem: str(500) }, ['file_id', 'problem']);

/** A dataset version (datasetView). */
export const datasetRecord: JsonSchema = obj({
  object: { const: 'dataset' },
  dataset_id: str(64),
  name: str(200),
  version: { type: 'integer', minimum: 1, description: 'Versions of a name count up from 1; an identical registration makes none.' },
  status: { enum: ['registering', 'registered', 'failed'], description: '`registering` until the workflow has re-hashed every member\'s bytes in the store.' },
  manifest_sha256: sha256Hex,
  manifest,
  problems: { oneOf: [{ type: 'null' }, arr(mismatch)], description: 'Null while registering; the mismatches that failed it, or empty.' },
  created_at: time,
  registered_at: nullableTime,
}, ['object', 'dataset_id', 'name', 'version', 'status', 'manifest_sha256', 'manifest', 'problems', 'created_at', 'registered_at']);

/** An offset page of dataset versions. */
export const datasetPage: JsonSchema = obj({
  items: arr(datasetRecord), has_more: { type: 'boolean' }, limit: count, offset: count,
}, ['items', 'has_more', 'limit', 'offset']);
