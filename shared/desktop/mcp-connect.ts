/**
 * Laptop mode: connecting an MCP client to this deployment's gateway (one server entry merged into the
 * client's file), and importing or declining detected local CLIs.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import { listPats, mintPat, patOwner, revokePat } from '../auth/store.js';
import { ForbiddenError } from '../errors.js';
import { setCandidateState } from './local-cli.js';
import { assertConnectable, desktopHome, mcpClient, writeGatewayEntry } from './mcp-clients.js';
import { desktopSetup } from './setup.js';

/** Imports or declines detected CLIs (all or nothing: an unknown id is 404 and changes none). */
export async function decideCandidates(
  deps: AppDeps,
  em: EntityManager,
  ids: string[],
  action: 'import' | 'decline',
  by: string,
) {
  await desktopSetup(deps);
  return setCandidateState(em, ids, action === 'import' ? 'imported' : 'declined', by);
}

/**
 * Writes the gateway entry into the client's file: with `url_only` the URL only; with `token` also a
 * personal access token minted for the caller (a person signed in through the identity provider),
 * replacing the one an earlier connect minted. The token is never answered.
 */
export async function connectMcpClient(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  clientId: string,
  auth: 'token' | 'url_only',
  url: string,
) {
  await desktopSetup(deps);
  const def = mcpClient(clientId);
  const home = await desktopHome(deps);
  await assertConnectable(def, home);
  if (auth === 'url_only') {
    const written = await writeGatewayEntry(def, home, { url, authorization: null });
    return { ...written, gateway_url: url, auth, pat_id: null, token_prefix: null };
  }
  if (principal.kind !== 'person' || principal.credential === 'pat' || principal.credential === 'sandbox_token')
    throw new ForbiddenError(
      'Minting a token for an MCP client needs a person signed in through the identity provider; connect with `auth` `url_only` instead.',
      { reason: 'cannot_mint_token' },
    );
  const name = `MCP client: ${def.name}`;
  const earlier = (await listPats(em, principal.id)).filter((p) => p.name === name && !p.revokedAt);
  const { pat, token } = await mintPat(em, {
    owner: patOwner(principal),
    name,
    expiresAt: null,
  });
  let written;
  try {
    written = await writeGatewayEntry(def, home, { url, authorization: `Bearer ${token}` });
  } catch (err) {
    await revokePat(em, principal.id, pat.id);
    throw err;
  }
  for (const old of earlier) await revokePat(em, principal.id, old.id);
  return { ...written, gateway_url: url, auth, pat_id: pat.id, token_prefix: pat.tokenPrefix };
}
