import type { ToolDef } from '../tools/tool.ts';
import { record, str, arr, count } from '../schemas/common.ts';
import { listComputeProfiles } from '../../storage/db/computeProfiles.ts';
import { microsToUsd } from '../../storage/ledger.ts';

export const computeProfile = record({
  id: str(), title: str(), kind: { enum: ['cpu', 'gpu'] }, vcpus: count, memory_mib: count,
  gpu: { type: ['string', 'null'] }, price_per_second_usd: { type: 'number', minimum: 0 }, max_runtime_seconds: count,
  availability: { enum: ['available', 'limited', 'unavailable'] },
});

export const computeProfileList: ToolDef = {
  name: 'compute_profile_list',
  description: 'Discover live CPU/GPU compute profiles with prices. Pass an item id as compute_profile_id to run preparation or an experiment arm. Availability is not a capacity guarantee.',
  scope: 'runs:read',
  readOnly: true,
  input: {},
  output: record({ items: arr(computeProfile) }),
  async handler(_input, { deps }) {
    const profiles = await listComputeProfiles(deps.db);
    // A profile is available when a worker serves its queue; when Temporal cannot be
    // asked, the answer is "limited" rather than a failure of this read.
    const items = await Promise.all(profiles.map(async (p) => {
      let availability: 'available' | 'limited' | 'unavailable';
      try {
        availability = (await deps.temporal.hasComputeWorker(p.id)) ? 'available' : 'unavailable';
      } catch {
        availability = 'limited';
      }
      return {
        id: p.id, title: p.title, kind: p.kind, vcpus: p.vcpus, memory_mib: p.memory_mib, gpu: p.gpu,
        price_per_second_usd: microsToUsd(p.price_per_second_micros), max_runtime_seconds: p.max_runtime_seconds, availability,
      };
    }));
    return { body: { items } };
  },
};
