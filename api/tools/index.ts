import type { ToolDef } from './tool.ts';
import { accountGet } from './account.ts';
import { computeProfileList } from './computeProfiles.ts';
import { capabilityGet, capabilityList } from './capabilities.ts';
import { skillGet, skillList } from './skills.ts';
import { runTools } from './runs.ts';
import { hubTools, labTools } from './hub.ts';
import { biologyTools } from './biology.ts';
import { workspaceTools } from './workspaces.ts';
import { experimentTools } from './experiments.ts';
import { passportTools } from './passports.ts';
import { publicationTools } from './publication.ts';
import { hostingTools } from './hosting.ts';
import { hostedInvocationTools } from './hostedInvocations.ts';
import { fileTools } from './files.ts';
import { sessionTools } from './sessions.ts';
import { webhookTools } from './webhooks.ts';

/** Every operation of the service, by name. REST routes and MCP tools both look here. */
export const TOOLS: ReadonlyMap<string, ToolDef> = new Map(
  [
    accountGet, computeProfileList, capabilityList, capabilityGet, skillList, skillGet,
    ...runTools, ...hubTools, ...biologyTools, ...labTools, ...workspaceTools, ...experimentTools,
    ...passportTools, ...publicationTools, ...hostingTools, ...hostedInvocationTools, ...fileTools, ...sessionTools, ...webhookTools,
  ].map((t) => [t.name, t]),
);

export function tool(name: string): ToolDef {
  const t = TOOLS.get(name);
  if (!t) throw new Error(`no tool ${name}`);
  return t;
}
