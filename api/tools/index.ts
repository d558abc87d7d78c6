import type { ToolDef } from './tool.ts';
import { accountGet } from '../account/operations.ts';
import { computeProfileList } from '../computeProfiles/operations.ts';
import { capabilityGet, capabilityList } from '../capabilities/operations.ts';
import { skillGet, skillList } from '../skills/operations.ts';
import { runTools } from '../runs/operations.ts';
import { hubTools, labTools } from '../hub/operations.ts';
import { biologyTools } from '../biology/operations.ts';
import { workspaceTools } from '../workspaces/operations.ts';
import { experimentTools } from '../experiments/operations.ts';
import { passportTools } from '../passports/operations.ts';
import { publicationTools } from '../publications/operations.ts';
import { hostingTools } from '../hosting/operations.ts';
import { hostedInvocationTools } from '../invocations/operations.ts';
import { fileTools } from '../files/operations.ts';
import { datasetTools } from '../datasets/operations.ts';
import { sessionTools } from '../sessions/operations.ts';
import { webhookTools } from '../webhooks/operations.ts';
import { purchaseTools } from '../purchases/operations.ts';
import { petabTools } from '../petab/operations.ts';

/** Every operation of the service, by name. REST routes and MCP tools both look here. */
export const TOOLS: ReadonlyMap<string, ToolDef> = new Map(
  [
    accountGet, computeProfileList, capabilityList, capabilityGet, skillList, skillGet,
    ...runTools, ...hubTools, ...biologyTools, ...labTools, ...workspaceTools, ...experimentTools,
    ...passportTools, ...publicationTools, ...hostingTools, ...hostedInvocationTools, ...fileTools, ...datasetTools, ...sessionTools, ...webhookTools, ...purchaseTools, ...petabTools,
  ].map((t) => [t.name, t]),
);

export function tool(name: string): ToolDef {
  const t = TOOLS.get(name);
  if (!t) throw new Error(`no tool ${name}`);
  return t;
}
