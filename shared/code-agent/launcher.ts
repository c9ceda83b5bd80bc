import type { EntityManager } from '@mikro-orm/postgresql';
import { latestImportedLocalCli } from '../desktop/local-cli.js';
import type { Settings } from '../settings/store.js';
import { DemoCodes } from '../demo/error-codes.js';

/**
 * The launcher settings (spec, "Code-agent connection", `enhancements.code_agent.*`) resolved into
 * the adapter a run uses. `auto` picks the local runner when `CODE_AGENT_RUNNER_COMMAND` is set,
 * else cloud when `connection_name` is set; an explicit `cloud` wins over a configured local runner.
 * Cloud runs need `target_repo_url`. Anything else is `CODING_AGENT_UNSUPPORTED`.
 */
export const CODING_AGENT_UNSUPPORTED = DemoCodes.CODING_AGENT_UNSUPPORTED;

export type CodeAgentAdapter = 'cloud' | 'local' | 'agent_cli';

interface Common {
  /** `enhancements.code_agent.enabled` (env `CODE_AGENT_TICKET_ENABLED`): launching from tickets. */
  enabled: boolean;
  targetRepoUrl: string;
  targetBaseRef: string;
  timeoutSeconds: number;
}

export type ResolvedLauncher =
  | (Common & { adapter: 'cloud'; connectionName: string; autoCreatePr: boolean })
  | (Common & { adapter: 'local'; command: string[] })
  | (Common & {
      adapter: 'agent_cli';
      command: string[];
      /** `api_key` connection holding the model credential handed to the CLI. */
      connectionName: string;
      /** `api_key` connection whose token clones, pushes and opens the pull request. */
      gitConnectionName: string;
      worktreeRoot: string;
    });

export interface LauncherUnsupported {
  code: typeof CODING_AGENT_UNSUPPORTED;
  message: string;
  /** The settings that would make a run possible. */
  missing: string[];
}

/** Splits the runner command at whitespace: program then arguments, never handed to a shell. */
export function runnerArgv(command: string | null | undefined): string[] {
  return (command ?? '').split(/\s+/).filter(Boolean);
}

const CLI = 'enhancements.coding_agent.agent_cli';

/** The agent CLI a run executes and where it came from (recorded in the run's steps). */
export interface AgentCliCommand {
  argv: string[];
  source: string;
}

/**
 * CODE_AGENT_CLI_COMMAND when set; else, in desktop mode, the most recently imported local CLI
 * (`POST /api/desktop/local-cli/import`, its recorded argv); else null.
 */
export async function agentCliCommand(settings: Settings, em: EntityManager): Promise<AgentCliCommand | null> {
  const argv = runnerArgv(await settings.get('enhancements.coding_agent.agent_cli.command'));
  if (argv.length) return { argv, source: 'CODE_AGENT_CLI_COMMAND' };
  if (!(await settings.get('desktop.enabled'))) return null;
  const cli = await latestImportedLocalCli(em);
  return cli?.command.length ? { argv: cli.command, source: `imported local CLI ${cli.name} (${cli.id})` } : null;
}

/**
 * The agent-CLI backend (`enhancements.coding_agent.backend` = `agent_cli`): usable when enabled and
 * its repository, both connections, worktree root and a command (CODE_AGENT_CLI_COMMAND, or in desktop
 * mode an imported local CLI) are set.
 */
async function resolveAgentCli(
  settings: Settings,
  em: EntityManager,
  timeoutSeconds: number,
  enabled: boolean,
): Promise<ResolvedLauncher | LauncherUnsupported> {
  const [on, repoUrl, baseRef, conn, gitConn, root, command] = await Promise.all([
    settings.get('enhancements.coding_agent.agent_cli.enabled'),
    settings.get('enhancements.coding_agent.agent_cli.target_repo_url'),
    settings.get('enhancements.coding_agent.agent_cli.target_base_ref'),
    settings.get('enhancements.coding_agent.agent_cli.connection_name'),
    settings.get('enhancements.coding_agent.agent_cli.git_connection_name'),
    settings.get('enhancements.coding_agent.agent_cli.worktree_root'),
    agentCliCommand(settings, em),
  ]);
  const argv = command?.argv ?? [];
  const missing = [
    ...(on ? [] : [`${CLI}.enabled`]),
    ...((repoUrl ?? '').trim() ? [] : [`${CLI}.target_repo_url`]),
    ...((conn ?? '').trim() ? [] : [`${CLI}.connection_name`]),
    ...((gitConn ?? '').trim() ? [] : [`${CLI}.git_connection_name`]),
    ...((root ?? '').trim() ? [] : [`${CLI}.worktree_root`]),
    ...(argv.length ? [] : ['CODE_AGENT_CLI_COMMAND']),
  ];
  if (missing.length)
    return {
      code: CODING_AGENT_UNSUPPORTED,
      message: `The agent-CLI backend is selected (enhancements.coding_agent.backend = agent_cli) but needs ${missing.join(', ')}.`,
      missing,
    };
  return {
    enabled,
    targetRepoUrl: (repoUrl ?? '').trim(),
    targetBaseRef: (baseRef ?? '').trim() || 'main',
    timeoutSeconds,
    adapter: 'agent_cli',
    command: argv,
    connectionName: (conn ?? '').trim(),
    gitConnectionName: (gitConn ?? '').trim(),
    worktreeRoot: (root ?? '').trim(),
  };
}

/** `em` reads the imported local CLIs (desktop mode) for the agent-CLI backend. */
export async function resolveLauncher(
  settings: Settings,
  em: EntityManager,
): Promise<ResolvedLauncher | LauncherUnsupported> {
  const get = <P extends Parameters<Settings['get']>[0]>(p: P) => settings.get(p);
  if ((await get('enhancements.coding_agent.backend')) === 'agent_cli')
    return await resolveAgentCli(
      settings,
      em,
      (await get('enhancements.code_agent.run_timeout_seconds')) ?? 3600,
      (await get('enhancements.code_agent.enabled')) ?? false,
    );
  const [enabled, adapter, connectionName, repoUrl, baseRef, autoCreatePr, command, timeoutSeconds] = await Promise.all(
    [
      get('enhancements.code_agent.enabled'),
      get('enhancements.code_agent.adapter'),
      get('enhancements.code_agent.connection_name'),
      get('enhancements.code_agent.target_repo_url'),
      get('enhancements.code_agent.target_base_ref'),
      get('enhancements.code_agent.auto_create_pr'),
      get('enhancements.code_agent.runner_command'),
      get('enhancements.code_agent.run_timeout_seconds'),
    ],
  );
  const argv = runnerArgv(command);
  const common: Common = {
    enabled: enabled ?? false,
    targetRepoUrl: (repoUrl ?? '').trim(),
    targetBaseRef: (baseRef ?? '').trim() || 'main',
    timeoutSeconds: timeoutSeconds ?? 3600,
  };
  const conn = (connectionName ?? '').trim();
  const chosen: CodeAgentAdapter | null =
    adapter === 'cloud' ? 'cloud' : adapter === 'local' ? 'local' : argv.length ? 'local' : conn ? 'cloud' : null;
  if (chosen === 'local') {
    if (!argv.length)
      return {
        code: CODING_AGENT_UNSUPPORTED,
        message: 'The local runner is selected but CODE_AGENT_RUNNER_COMMAND is not set.',
        missing: ['CODE_AGENT_RUNNER_COMMAND'],
      };
    return { ...common, adapter: 'local', command: argv };
  }
  if (chosen === 'cloud') {
    const missing = [
      ...(conn ? [] : ['enhancements.code_agent.connection_name']),
      ...(common.targetRepoUrl ? [] : ['enhancements.code_agent.target_repo_url']),
    ];
    if (missing.length)
      return {
        code: CODING_AGENT_UNSUPPORTED,
        message: `The cloud code agent needs ${missing.join(' and ')}.`,
        missing,
      };
    return { ...common, adapter: 'cloud', connectionName: conn, autoCreatePr: autoCreatePr ?? true };
  }
  return {
    code: CODING_AGENT_UNSUPPORTED,
    message:
      'No code-agent adapter is usable: set CODE_AGENT_RUNNER_COMMAND for the local runner, or enhancements.code_agent.connection_name and target_repo_url for the cloud agent.',
    missing: ['CODE_AGENT_RUNNER_COMMAND', 'enhancements.code_agent.connection_name'],
  };
}

export function isUnsupported(r: ResolvedLauncher | LauncherUnsupported): r is LauncherUnsupported {
  return 'code' in r;
}
