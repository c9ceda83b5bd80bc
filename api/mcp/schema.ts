import { z } from 'zod';
import type { GatewayVersion, McpActionCatalog } from './actions/registry.js';

const jsonShape = (schema: z.ZodType): string => {
  const { description: _d, ...rest } = z.toJSONSchema(schema, { unrepresentable: 'any', io: 'input' }) as Record<
    string,
    unknown
  >;
  return JSON.stringify(rest);
};

/**
 * The `platform` tool's input schema for a version: one flat object (a discriminated union is
 * advertised by the SDK as an empty schema) with `action` and every listed action's parameters as
 * optional fields. `action` is advertised as an enum but accepts any string, so the handler can answer
 * a v1-only action on v2 with a refusal that names /mcp/v1/ instead of a bare validation error. A
 * parameter two actions declare differently is advertised without a type; each action validates its own
 * and refuses any parameter it does not take.
 */
export function platformInputSchema(catalog: McpActionCatalog, version: GatewayVersion): z.ZodObject {
  // Built once per catalog and version: the gateway creates a server per request, and rebuilding this
  // (with a JSON Schema conversion per shared parameter) was the largest cost of a gateway call.
  let byVersion = inputSchemas.get(catalog);
  if (!byVersion) inputSchemas.set(catalog, (byVersion = new Map()));
  let schema = byVersion.get(version);
  if (!schema) byVersion.set(version, (schema = buildPlatformInputSchema(catalog, version)));
  return schema;
}

const inputSchemas = new WeakMap<McpActionCatalog, Map<GatewayVersion, z.ZodObject>>();

function buildPlatformInputSchema(catalog: McpActionCatalog, version: GatewayVersion): z.ZodObject {
  const shape: Record<string, z.ZodType> = {
    action: z
      .string()
      .meta({ enum: catalog.names(version) })
      .describe('The action to run; `help` lists every action with its parameters.'),
  };
  const fields = new Map<string, { schema: z.ZodType; users: string[]; conflicting: boolean }>();
  for (const def of catalog.actions(version)) {
    for (const [key, field] of Object.entries(def.params.shape as Record<string, z.ZodType>)) {
      const seen = fields.get(key);
      if (!seen) fields.set(key, { schema: field, users: [def.name], conflicting: false });
      else {
        seen.users.push(def.name);
        if (jsonShape(seen.schema) !== jsonShape(field)) seen.conflicting = true;
      }
    }
  }
  for (const [key, { schema, users, conflicting }] of fields) {
    const base = conflicting ? z.unknown().optional() : schema.optional();
    const description = schema.description ? `${schema.description} ` : '';
    shape[key] = base.describe(`${description}(used by: ${users.join(', ')})`);
  }
  // Loose so an unknown parameter reaches the dispatcher, which refuses it naming the action's parameters
  // (a stripping object would drop it silently); advertised closed, as every call with one is refused.
  return z.looseObject(shape).meta({ additionalProperties: false });
}

/** One action's parameters, as `help` shows them. */
export function describeParameters(catalog: McpActionCatalog, name: string, version: GatewayVersion) {
  const def = catalog.find(name, version);
  if (!def) return [];
  return Object.entries(def.params.shape as Record<string, z.ZodType>).map(([param, schema]) => ({
    name: param,
    required: !schema.safeParse(undefined).success,
    description: schema.description ?? null,
    schema: JSON.parse(jsonShape(schema)) as unknown,
  }));
}
