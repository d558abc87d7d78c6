import type { ToolDef } from './tool.ts';
import { nullableStr } from '../schemas/common.ts';

export const passportTools: ToolDef[] = [
  {
    name: 'passport_get', scope: 'passports:read', readOnly: true,
    description: 'Return a signed per-check evidence passport for exactly one owned subject (not a validity score).',
    input: {
      query: {
        passport_id: nullableStr(64), run_id: { type: ['string', 'null'], format: 'uuid' },
        workspace_id: { type: ['string', 'null'], format: 'uuid' }, revision_id: { type: ['string', 'null'], format: 'uuid' },
      },
    },
  },
];
