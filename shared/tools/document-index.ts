import { z } from 'zod';
import {
  addTextAction,
  askAction,
  createIndexAction,
  deleteDocumentAction,
  deleteIndexAction,
  getDocumentAction,
  listDocumentsAction,
  listIndicesAction,
  renameDocumentAction,
  renameIndexAction,
  searchAction,
  statsAction,
  type Ctx,
} from '../document-index/actions.js';
import { addDocumentsAction } from '../document-index/add-documents.js';
import { rechunkAction } from '../document-index/rechunk-service.js';
import { openKbPullRequestAction, proposeKbEditAction } from '../document-index/kb-edit.js';
import { agentIndexScope } from '../document-index/knowledge-bases.js';
import { ForbiddenError } from '../errors.js';
import { defineTool } from './registry.js';
import { DocumentIndexResult } from './results.js';

const IndexName = z
  .string()
  .trim()
  .min(1)
  .max(200)
  // eslint-disable-next-line no-control-regex -- control characters are what an index name may not hold
  .regex(/^[^\0-\x1f/]+$/, 'an index name (no slashes or control characters)');
const ChunkParams = {
  chunk_size: z.number().int().min(1).max(100_000).nullish().describe('tokens of about 4 characters (default 1024)'),
  chunk_overlap: z.number().int().min(0).max(100_000).nullish().describe('tokens (default 200); less than chunk_size'),
  chunk_strategy: z.enum(['sentence', 'one_chunk_per_doc']).nullish(),
};
const DocRef = {
  file_id: z.string().min(1).max(100).optional(),
  filepath: z.string().min(1).max(4096).optional(),
};
const needsRef = (v: { file_id?: string; filepath?: string }) => !!(v.file_id || v.filepath);
const refMessage = { message: 'give file_id or filepath', path: ['file_id'] };

const Input = z.discriminatedUnion('action', [
  z.strictObject({ action: z.literal('CREATE_INDEX'), index_name: IndexName, ...ChunkParams }),
  z.strictObject({ action: z.literal('RENAME_INDEX'), index_name: IndexName, new_index_name: IndexName }),
  z.strictObject({ action: z.literal('DELETE_INDEX'), index_name: IndexName }),
  z.strictObject({ action: z.literal('LIST_INDICES') }),
  z.strictObject({
    action: z.literal('ADD_DOCUMENTS'),
    index_name: IndexName,
    filepath: z.string().min(1).max(4096).describe('a file or directory on the server (BOT_GIT: prefix allowed)'),
    ...ChunkParams,
  }),
  z.strictObject({
    action: z.literal('ADD_TEXT'),
    index_name: IndexName,
    text: z.string().min(1).max(5_000_000),
    metadata: z.record(z.string(), z.unknown()).optional(),
    ...ChunkParams,
  }),
  z.strictObject({
    action: z.literal('LIST_DOCUMENTS'),
    index_name: IndexName,
    path_filter: z.string().max(1000).optional(),
    query: z.string().max(1000).optional(),
    show_files_only: z.boolean().default(true),
    start: z.number().int().min(0).default(0),
    count: z.number().int().min(1).max(50).default(50).describe('at most 50'),
  }),
  z
    .strictObject({
      action: z.literal('GET_DOCUMENT'),
      index_name: IndexName,
      ...DocRef,
      pagination_mode: z.enum(['lines', 'chars']).nullable().default(null),
      start: z.number().int().min(0).default(0),
      count: z.number().int().min(1).max(1_000_000).optional(),
    })
    .refine(needsRef, refMessage),
  z
    .strictObject({ action: z.literal('DELETE_DOCUMENT'), index_name: IndexName, ...DocRef })
    .refine(needsRef, refMessage),
  z.strictObject({
    action: z.literal('RENAME_DOCUMENT'),
    index_name: IndexName,
    filepath: z.string().min(1).max(4096),
    new_filename: z
      .string()
      .trim()
      .min(1)
      .max(255)
      // eslint-disable-next-line no-control-regex -- a file name holds no control characters or slashes
      .regex(/^[^\0-\x1f/\\]+$/, 'a file name (no slashes)'),
  }),
  z.strictObject({
    action: z.literal('SEARCH'),
    index_name: IndexName.optional(),
    query: z.string().trim().min(1).max(2000),
    top_n: z.number().int().min(1).max(100).default(10),
  }),
  z.strictObject({
    action: z.literal('ASK'),
    query: z.string().trim().min(1).max(2000),
    top_n: z.number().int().min(1).max(50).default(5),
    index_name: IndexName.optional().describe(
      'the index to answer from; all indices when omitted (the spec has ASK ignore it; issue 28 decided that a named index is honoured)',
    ),
  }),
  z.strictObject({ action: z.literal('GET_INDICES_STATS') }),
  z.strictObject({ action: z.literal('RECHUNK'), index_name: IndexName, ...ChunkParams }),
  z.strictObject({
    action: z.literal('propose_kb_edit'),
    source_id_or_index: z.string().max(200).default(''),
    relative_path: z.string().max(4096).default(''),
    content: z.string().max(1_000_000).default(''),
    search: z.string().max(1_000_000).default(''),
    replace: z.string().max(1_000_000).default(''),
    note: z.string().max(4000).default(''),
    operation: z
      .enum(['write', 'delete', 'rename'])
      .default('write')
      .describe('write (default) adds or changes the file; delete removes it; rename moves it to new_relative_path'),
    new_relative_path: z.string().max(4096).default('').describe('rename only: the new path under documents_root'),
  }),
  z.strictObject({
    action: z.literal('open_kb_pull_request'),
    source_id_or_index: z.string().max(200).default(''),
    target_index: z.string().max(200).default(''),
    title: z.string().max(500).default(''),
    body: z.string().max(20000).default(''),
    commit_message: z.string().max(2000).default(''),
  }),
]);

const WRITES = new Set([
  'CREATE_INDEX',
  'RENAME_INDEX',
  'DELETE_INDEX',
  'ADD_DOCUMENTS',
  'ADD_TEXT',
  'DELETE_DOCUMENT',
  'RENAME_DOCUMENT',
  'RECHUNK',
  'propose_kb_edit',
  'open_kb_pull_request',
]);

const chunkParams = (i: {
  chunk_size?: number | null;
  chunk_overlap?: number | null;
  chunk_strategy?: string | null;
}) => ({
  chunk_size: i.chunk_size ?? null,
  chunk_overlap: i.chunk_overlap ?? null,
  chunk_strategy: (i.chunk_strategy ?? null) as 'sentence' | 'one_chunk_per_doc' | null,
});

/**
 * `_document_index` (tool group `document_index_tools`): document indexes, one `action` per call
 * (spec, "Document-index tool"). Reads need no permission; writes need `manage_agents` of non-agent
 * callers (indexes feed the knowledge bases assigned to agents). An agent's SEARCH and ASK see only the
 * indexes of its knowledge bases (none assigned: none); a person, the system and apps see every index.
 */
export const documentIndexTool = defineTool({
  name: '_document_index',
  description:
    'Document indexes: CREATE_INDEX, RENAME_INDEX, DELETE_INDEX, LIST_INDICES, ADD_DOCUMENTS, ADD_TEXT, LIST_DOCUMENTS, GET_DOCUMENT, DELETE_DOCUMENT, RENAME_DOCUMENT, SEARCH, ASK, GET_INDICES_STATS, RECHUNK; Git-backed knowledge bases: propose_kb_edit stages a file change, open_kb_pull_request raises an Action Review proposal that pushes a branch and opens the pull request.',
  input: Input,
  result: DocumentIndexResult,
  principalKinds: ['person', 'agent', 'system', 'app'],
  async handler({ input, principal, deps, em, idempotencyKey }) {
    if (WRITES.has(input.action) && principal.kind !== 'agent' && !principal.permissions.has('manage_agents'))
      throw new ForbiddenError(
        `Permission denied: ${input.action} of the _document_index tool needs the "manage_agents" permission. Ask an administrator to grant you a role that includes it.`,
        { required_permission: 'manage_agents' },
      );
    const c: Ctx = { em, config: deps.config, tenant: principal.tenant };
    // An agent reads only its knowledge bases' indexes, looked up on every call (no cache to outlive a change).
    if ((input.action === 'SEARCH' || input.action === 'ASK') && principal.kind === 'agent')
      c.indexScope = await agentIndexScope(em, principal.tenant, principal.botId ?? principal.id);
    switch (input.action) {
      case 'CREATE_INDEX':
        return createIndexAction(c, input.index_name, chunkParams(input));
      case 'RENAME_INDEX':
        return renameIndexAction(c, input.index_name, input.new_index_name);
      case 'DELETE_INDEX':
        return deleteIndexAction(c, input.index_name);
      case 'LIST_INDICES':
        return listIndicesAction(c);
      case 'ADD_DOCUMENTS':
        return addDocumentsAction(c, deps, input.index_name, input.filepath, chunkParams(input));
      case 'ADD_TEXT':
        return addTextAction(c, input.index_name, input.text, input.metadata, chunkParams(input));
      case 'LIST_DOCUMENTS':
        return listDocumentsAction(c, input);
      case 'GET_DOCUMENT':
        return getDocumentAction(c, input);
      case 'DELETE_DOCUMENT':
        return deleteDocumentAction(c, input);
      case 'RENAME_DOCUMENT':
        return renameDocumentAction(c, input);
      case 'SEARCH':
        return searchAction(c, input.index_name, input.query, input.top_n);
      case 'ASK':
        return askAction(c, input.index_name, input.query, input.top_n);
      case 'GET_INDICES_STATS':
        return { Success: true, Indices: await statsAction(c) };
      case 'RECHUNK':
        return rechunkAction(c, deps, input.index_name, chunkParams(input));
      case 'propose_kb_edit':
        return proposeKbEditAction(deps, em, principal, input);
      case 'open_kb_pull_request':
        return openKbPullRequestAction(deps, em, principal, input, idempotencyKey ?? null);
    }
  },
});
