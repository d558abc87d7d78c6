import type { ToolDef } from './tool.ts';
import { str, nullableStr, limit, cursor, arr, sha256Hex, obj, id } from '../schemas/common.ts';

export const hubTools: ToolDef[] = [
  {
    name: 'hub_search', scope: 'hub:read', readOnly: true,
    description: 'Search accessible Hub releases; ask the user to choose before running an ambiguous result.',
    input: {
      query: {
        query: nullableStr(200), package_type: { enum: ['lab', 'model', null] }, tags: arr(str(64), { maxItems: 20 }),
        intended_use: { enum: ['education', 'research', 'benchmark', 'production', null] },
        compute_class: { enum: ['cpu', 'gpu', null] },
        qualification_state: { enum: ['unqualified', 'smoke_tested', 'qualified', null] },
        limit, cursor,
      },
    },
  },
  {
    name: 'hub_inspect', scope: 'hub:read', readOnly: true,
    description: 'Inspect one immutable release without executing or trusting contributed metadata.',
    input: { path: { reference: str(300) } },
  },
];

export const biologyTools: ToolDef[] = [
  {
    name: 'biology_search', scope: 'biology:read', readOnly: true,
    description: 'Search approved biology sources; fetch before treating a hit as exact pinned evidence.',
    input: { body: obj({ source_ids: arr({ enum: ['uniprot', 'pdb', 'ncbi_nucleotide'] }, { minItems: 1, maxItems: 3 }), query: str(500, { minLength: 1 }) }, ['source_ids', 'query']) },
  },
  {
    name: 'biology_fetch', scope: 'biology:read', readOnly: false,
    description: 'Persist exact records or one model artifact as opaque resources; does not pin a revision.',
    input: {
      body: obj({
        source_id: { enum: ['uniprot', 'pdb', 'ncbi_nucleotide'] },
        record_ids: arr(str(100), { minItems: 1, maxItems: 20 }),
        expected_sha256: sha256Hex,
      }, ['source_id', 'record_ids']),
    },
  },
];

export const labTools: ToolDef[] = [
  {
    name: 'lab_list', scope: 'hub:read', readOnly: true,
    description: 'List labs the caller owns, released or not, with exact release references.',
    input: { query: { query: nullableStr(200), visibility: { enum: ['private', 'team', 'public', null] }, limit, cursor } },
  },
  {
    name: 'lab_update', scope: 'packages:publish', readOnly: false,
    description: 'Update an editable lab (title, description, content settings); Hub listing cannot be changed here.',
    input: {
      path: { lab_id: id('lab') },
      body: obj({ title: str(200, { minLength: 1 }), description: str(5000), content_settings: { type: 'object' } }, [], { minProperties: 1 }),
    },
  },
  {
    name: 'lab_visibility_set', scope: 'packages:publish', readOnly: false,
    description: 'Re-scope an owned lab without releasing a new version; deletes nothing.',
    input: { path: { lab_id: id('lab') }, body: obj({ visibility: { enum: ['private', 'team', 'public'] } }, ['visibility']) },
  },
];
