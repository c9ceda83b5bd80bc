import type { EntityManager } from '@mikro-orm/postgresql';
import type Koa from 'koa';
import { z } from 'zod';
import type { Principal, PrincipalKind } from '../../shared/auth/principal.js';
import type { Permission } from '../../shared/auth/rbac.js';
import type { Logger } from '../../shared/log.js';
import type { AppDeps } from '../../shared/app-deps.js';
import type { MultipartLimits, UploadedFile } from './multipart.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Who may call a route. `authenticated` routes name the permission the guard checks before the handler
 * runs (a list: any one of them), or `null` when any signed-in principal may call it and the handler
 * scopes the answer to the caller (their tenant, what they own or were granted, a permission that
 * depends on the input): the key is required, so every route states its rule, and
 * tests/api/authorization-matrix.test.ts derives its cases from it. They may also name the principal kinds they accept; `internal` routes take only `X-Platform-Internal-Token` (with `bearer`, also that token
 * as `Authorization: Bearer`, for scrapers that can send only that); `presenter` routes (the
 * hosted demo's presenter routes) take either that header or a person holding the `present_demos`
 * permission and the role `staff` or `admin` (the handler's `principal` is absent for the token).
 */
export type Access =
  | { kind: 'public' }
  | { kind: 'internal'; bearer?: true }
  | { kind: 'presenter' }
  | {
      kind: 'authenticated';
      permission: Permission | readonly Permission[] | null;
      principalKinds?: readonly PrincipalKind[];
    };

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** The media type the schema describes (`application/json` unless named, e.g. `text/event-stream`). */
  mediaType?: string;
  /** Response headers this answer may carry (name as sent: description and schema), shown in the OpenAPI document. */
  headers?: Record<string, { description: string; schema: z.ZodType }>;
}

type AnyObject = z.ZodObject<z.ZodRawShape>;

export interface RouteContext<P, Q, B> {
  params: P;
  query: Q;
  /** The headers the route declares (`RouteSpec.headers`), validated; empty when it declares none. */
  headers: Record<string, unknown>;
  body: B;
  /** Present on every route but public and internal ones (and `presenter` routes called with the internal token). */
  principal: Principal;
  deps: AppDeps;
  em: EntityManager;
  requestId: string;
  log: Logger;
  koa: Koa.Context;
  /** Files of a `multipart` route, readable until the request ends (then removed); empty elsewhere. */
  files: UploadedFile[];
}

export interface RouteSpec<P extends AnyObject, Q extends AnyObject, B extends z.ZodType> {
  method: HttpMethod;
  /** Koa-style path (`/api/things/:id`); the OpenAPI document shows `{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  access: Access;
  /**
   * A `public` route's own check of its caller (the MCP gateway: the browser origin, then its credential with
   * the MCP challenge), run where the guard runs: before the body is read. It may leave what it learned in
   * `ctx.state` for the handler.
   */
  guard?: (ctx: Koa.Context, deps: AppDeps, em: EntityManager) => Promise<void>;
  params?: P;
  query?: Q;
  /**
   * Request headers the route reads (names lower-case, as Node gives them), validated like the query; others
   * are not validated (credentials are the guard's). The handler gets them in `headers`.
   */
  headers?: AnyObject;
  body?: B;
  /**
   * The body as the OpenAPI document shows it, when the handler validates it more precisely than `body`
   * after checking the caller (POST /api/tool_call: each tool's own arguments).
   */
  publishedBody?: z.ZodType;
  /**
   * `config` bodies refuse undeclared fields with 422 (spec, Errors); `json` bodies ignore them;
   * `form` routes take `application/x-www-form-urlencoded` (OAuth token requests) instead of JSON;
   * `jsonrpc` bodies are handed to a protocol handler that validates each message itself (the MCP
   * gateway: every action validates its parameters, NUL included, and answers a tool error);
   * `multipart` routes take `multipart/form-data` within `multipart` limits (the body schema covers the
   * non-file fields; files reach the handler as `files`).
   */
  bodyKind?: 'json' | 'config' | 'form' | 'jsonrpc' | 'multipart';
  /** Limits and file fields of a `multipart` route (required with that body kind). */
  multipart?: MultipartLimits;
  successStatus?: number;
  /**
   * The spec section that states this route's own success shape; without it, a 2xx answers the
   * default envelope `{success, data}` (checked for every route by tests/api/response-contract.test.ts).
   */
  ownShape?: string;
  /**
   * The spec section that states this route answers some outcomes as a 2xx with `success` false at
   * the top of its body (approve-and-execute's refusals, LlmOperationResponse). Without it no 2xx
   * carries `success: false` anywhere: a refusal is a 4xx/5xx error envelope (checked on every
   * response of every suite by tests/helpers/status-contract.ts).
   */
  successFalseAt2xx?: string;
  /** `oauth`: a 400 from validation leaves as an RFC 6749 error body (`error: invalid_request`, `error_description`), not the envelope. */
  refusalBody?: 'oauth';
  responses: Record<number, ResponseSpec>;
  handler: (ctx: RouteContext<z.output<P>, z.output<Q>, z.output<B>>) => Promise<unknown>;
}

// Routes are heterogenous in their schemas; the registry only needs the erased shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteSpec<any, any, any>;

/** Declares a route; the identity function exists for type inference of handler arguments. */
export function defineRoute<P extends AnyObject, Q extends AnyObject, B extends z.ZodType>(
  spec: RouteSpec<P, Q, B>,
): RouteSpec<P, Q, B> {
  return spec;
}

/**
 * Whether a request to this route must carry a body. PUT and PATCH always (a missing body is a client
 * error, never an empty replacement); a POST whose body schema accepts `{}` may be sent without one
 * (e.g. `approve` with no reason) and is then validated as `{}`.
 */
export function bodyRequired(route: AnyRoute): boolean {
  if (!route.body) return false;
  if (route.method === 'put' || route.method === 'patch') return true;
  return !(route.body as z.ZodType).safeParse({}).success;
}

/** Query-string boolean: `true`/`false`/`1`/`0`, with a default. */
export function queryBoolean(defaultValue: boolean) {
  return z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => (v === undefined ? defaultValue : v === 'true' || v === '1'));
}

/** The spec's common success envelope `{success: true, data}`. */
export function successEnvelope<T extends z.ZodType>(data: T) {
  return z.object({ success: z.literal(true), data });
}

export const ErrorEnvelopeSchema = z
  .object({
    error: z.string().describe('Human-readable message'),
    error_type: z.string().describe('Stable error class, e.g. bad_request, authentication, forbidden'),
    request_id: z.string().describe('Same value as the X-Request-Id response header'),
    payload: z.record(z.string(), z.unknown()).optional().describe('Details, e.g. failing fields or a named code'),
  })
  .meta({ id: 'ErrorEnvelope' });

/** A refusal response as the OpenAPI document shows it: its description and the error envelope. */
export const errorResponse = (description: string): ResponseSpec => ({ description, schema: ErrorEnvelopeSchema });

/**
 * The preamble a route area repeats: its OpenAPI tag, the signed-in access most of its routes take,
 * and `err` for its refusal responses (`const { tags, authed, err } = routeArea('projects')`).
 */
export function routeArea(tag: string) {
  return { tags: [tag], authed: { kind: 'authenticated' as const, permission: null }, err: errorResponse };
}
