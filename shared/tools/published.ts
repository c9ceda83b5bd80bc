import { z } from 'zod';
import { toolRegistry } from './index.js';
import type { AnyTool } from './registry.js';

/** Component names of a tool's schemas in the OpenAPI document. */
export const toolSchemaIds = (name: string) => ({
  call: `Tool_${name}_Call`,
  args: `Tool_${name}_Args`,
  result: `Tool_${name}_Result`,
  answer: `Tool_${name}_Answer`,
});

/** `{tool, <field>}` for each tool, as a union discriminated by `tool` (OpenAPI `oneOf` + `discriminator`). */
function byTool(tools: AnyTool[], kind: 'call' | 'answer', field: (tool: AnyTool) => Record<string, z.ZodType>) {
  const branches = tools.map((tool) =>
    z.strictObject({ tool: z.literal(tool.name), ...field(tool) }).meta({ id: toolSchemaIds(tool.name)[kind] }),
  );
  const mapping = Object.fromEntries(
    tools.map((tool) => [tool.name, `#/components/schemas/${toolSchemaIds(tool.name)[kind]}`]),
  );
  return z
    .discriminatedUnion('tool', branches as unknown as [z.ZodObject, ...z.ZodObject[]])
    .meta({ discriminator: { propertyName: 'tool', mapping } });
}

/**
 * What `POST /api/tool_call` publishes, from the registry: the body as one branch per tool (its
 * arguments `Tool_<name>_Args`) and the answer as one branch per tool (its result `Tool_<name>_Result`).
 * Built once: a schema id may be registered only once.
 */
export function publishedToolCall(tools: AnyTool[] = toolRegistry.all()) {
  return {
    body: byTool(tools, 'call', (tool) => {
      const args = tool.input.meta({ id: toolSchemaIds(tool.name).args, description: tool.description });
      // `arguments` defaults to {}: it may be left out where the tool takes no required argument.
      return { arguments: tool.input.safeParse({}).success ? args.optional() : args };
    }),
    answer: byTool(tools, 'answer', (tool) => ({
      result: tool.result.meta({ id: toolSchemaIds(tool.name).result }),
    })),
  };
}
