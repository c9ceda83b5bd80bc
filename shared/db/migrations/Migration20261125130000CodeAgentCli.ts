import { Migration } from '@mikro-orm/migrations';

/**
 * The agent-CLI code-agent backend (issue 16): runs with adapter `agent_cli`, the per-run worktree
 * they use (removed when the run ends) and the run's outcome (`pull_request`, `no_changes`).
 */
export class Migration20261125130000CodeAgentCli extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table code_agent_runs drop constraint if exists code_agent_runs_adapter_check');
    this.addSql(
      `alter table code_agent_runs add constraint code_agent_runs_adapter_check
        check (adapter in ('cloud', 'local', 'agent_cli'))`,
    );
    this.addSql('alter table code_agent_runs add column worktree_path text null');
    this.addSql('alter table code_agent_runs add column git_connection_name text null');
    this.addSql(
      `alter table code_agent_runs add column outcome text null check (outcome in ('pull_request', 'no_changes'))`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('alter table code_agent_runs drop column if exists outcome');
    this.addSql('alter table code_agent_runs drop column if exists git_connection_name');
    this.addSql('alter table code_agent_runs drop column if exists worktree_path');
    this.addSql('alter table code_agent_runs drop constraint if exists code_agent_runs_adapter_check');
    this.addSql(
      `alter table code_agent_runs add constraint code_agent_runs_adapter_check check (adapter in ('cloud', 'local'))`,
    );
  }
}
