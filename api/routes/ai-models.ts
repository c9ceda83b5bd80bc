import { z } from 'zod';
import { PROVIDER_KINDS, SubProvider } from '../../shared/llm/provider-kinds.js';
import { listProviders, readLlmSettings } from '../../shared/llm/provider-store.js';
import { defineRoute, successEnvelope, type AnyRoute } from '../http/route.js';
import { LlmOperationResponse } from './llm-providers.js';
import { activeSummary, overviewRow } from '../../shared/llm/provider-views.js';
import type { LlmOperationResult } from '../../shared/llm/provider-service.js';
import {
  embeddingHealth,
  embeddingsConfig,
  reindexingStatus,
  setEmbeddingsConfig,
  setMainModelAssignments,
} from '../../shared/llm/embedding-settings.js';

const tags = ['config'];
const panel = { kind: 'authenticated', permission: 'access_config_panel' } as const;
const Kind = z.enum(PROVIDER_KINDS);
const ModelName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$/);

const EmbeddingIdentity = z.object({
  source: z.enum(['saved', 'active_provider', 'none']),
  provider_kind: z.string().nullable(),
  sub_provider: z.string().nullable(),
  model_name: z.string().nullable(),
});

export const aiModelRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/config/ai-providers/overview',
    operationId: 'getAiProvidersOverview',
    summary: 'Read-only overview of the providers for any signed-in user (masked subtitles, no secrets)',
    tags,
    access: { kind: 'authenticated', permission: null },
    responses: {
      200: {
        description: 'Overview',
        schema: successEnvelope(
          z.object({
            active: z.record(z.string(), z.unknown()),
            providers: z.array(z.record(z.string(), z.unknown())),
          }),
        ),
      },
    },
    handler: async (c) => {
      const [providers, s] = await Promise.all([
        listProviders(c.em, c.principal.tenant),
        readLlmSettings(c.em, c.principal.tenant),
      ]);
      return {
        success: true,
        data: {
          active: activeSummary(c.deps.config, providers, s),
          providers: providers.map((p) => overviewRow(p, s)),
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/ai-providers/embedding-health',
    operationId: 'getEmbeddingHealth',
    summary: 'One embedding call against the embedding provider, waiting at most 5 s (`unavailable` when slow or down)',
    tags,
    access: panel,
    responses: {
      200: {
        description: 'Health',
        schema: successEnvelope(
          z.object({
            status: z.enum(['ok', 'unavailable', 'not_configured']),
            provider: z.string().nullable(),
            model: z.string().nullable(),
            dimensions: z.number().int().nullable(),
            message: z.string(),
            checked_at: z.string(),
            startup_smoke_tests: z.array(
              z.object({
                provider: z.string(),
                model: z.string(),
                status: z.enum(['pending', 'ok', 'failed']),
                message: z.string(),
                started_at: z.string(),
                finished_at: z.string().nullable(),
              }),
            ),
          }),
        ),
      },
    },
    handler: async (c) => embeddingHealth(c),
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/models/embeddings/config',
    operationId: 'getEmbeddingsConfig',
    summary: 'The embedding identity (provider and model): saved, else the active provider’s embedding model',
    tags,
    access: panel,
    responses: { 200: { description: 'Embedding identity', schema: successEnvelope(EmbeddingIdentity) } },
    handler: async (c) => embeddingsConfig(c),
  }),
  defineRoute({
    method: 'put',
    path: '/api/config/models/embeddings/config',
    operationId: 'setEmbeddingsConfig',
    summary: 'Set the embedding identity; a change marks indexes for re-embedding',
    tags,
    access: panel,
    body: z.object({ provider_kind: Kind, sub_provider: SubProvider.optional(), model_name: ModelName }).strict(),
    bodyKind: 'config',
    ownShape: 'Other named resources: LlmOperationResponse',
    responses: {
      200: { description: 'Saved, or unchanged', schema: LlmOperationResponse },
      404: { description: 'No configuration for that provider is saved (`not_found`); nothing changed' },
    },
    handler: async (c): Promise<LlmOperationResult> => setEmbeddingsConfig(c),
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/models/embeddings/reindexing-status',
    operationId: 'getReindexingStatus',
    summary: 'Progress of re-embedding after an embedding identity change',
    tags,
    access: panel,
    responses: {
      200: {
        description: 'Status',
        schema: successEnvelope(
          z.object({
            status: z.enum(['idle', 'pending', 'running', 'completed', 'failed', 'superseded']),
            run_id: z.string().nullable(),
            requested_at: z.string().nullable(),
            from: z.record(z.string(), z.unknown()).nullable(),
            to: z.record(z.string(), z.unknown()).nullable(),
            indexes: z.array(z.string()),
            indexes_total: z.number().int(),
            indexes_done: z.number().int(),
            total: z.number().int(),
            done: z.number().int(),
            failed: z.number().int(),
            over_input_window: z.number().int(),
            error: z.string().nullable(),
            started_at: z.string().nullable(),
            finished_at: z.string().nullable(),
          }),
        ),
      },
    },
    handler: async (c) => reindexingStatus(c),
  }),
  defineRoute({
    method: 'put',
    path: '/api/config/models/main/assignments',
    operationId: 'setMainModelAssignments',
    summary: 'Model assignments of a provider (default: the active one); `use_defaults` returns to its own models',
    tags,
    access: panel,
    body: z
      .object({
        provider_kind: Kind.optional(),
        sub_provider: SubProvider.optional(),
        use_defaults: z.boolean().optional(),
        chat_model_name: ModelName.optional(),
        fast_model_name: ModelName.optional(),
      })
      .strict(),
    bodyKind: 'config',
    responses: {
      200: {
        description: 'Stored assignments',
        schema: successEnvelope(z.object({ provider: z.string(), assignments: z.record(z.string(), z.string()) })),
      },
    },
    handler: async (c) => setMainModelAssignments(c),
  }),
];
