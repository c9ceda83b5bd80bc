import { Migration } from '@mikro-orm/migrations';

/**
 * Secrets and keys: the keyring of managed encryption keys (each wrapped by the root key), the
 * re-seal rotations, the mesh settings (auth key sealed), and a trigger on every table with sealed
 * values that refuses a value sealed under a retired or unknown managed key (so a writer holding
 * an old keyring can never leave a secret under a key that is gone).
 */
export class Migration20261123110000Secrets extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table secret_keys (
      kid text primary key,
      wrapped text null,
      fingerprint text not null,
      status text not null check (status in ('pending', 'active', 'retiring', 'retired')),
      created_at timestamptz not null default now(),
      activated_at timestamptz null,
      retired_at timestamptz null,
      check ((status = 'retired') = (wrapped is null))
    )`);
    this.addSql(`create unique index secret_keys_one_active_idx on secret_keys ((true)) where status = 'active'`);
    this.addSql(`create table secret_rotations (
      id text primary key,
      target_kid text not null references secret_keys (kid),
      status text not null check (status in ('pending', 'running', 'completed', 'failed')),
      phase text not null default 'pending',
      resealed integer not null default 0,
      passes integer not null default 0,
      retired_kids jsonb not null default '[]',
      error text null,
      started_by text not null,
      created_at timestamptz not null default now(),
      finished_at timestamptz null
    )`);
    this.addSql(
      `create unique index secret_rotations_one_unfinished_idx on secret_rotations ((true)) where status in ('pending', 'running')`,
    );
    this.addSql(`create table mesh_settings (
      id text primary key,
      enabled boolean not null default false,
      auth_key_sealed text null,
      egress jsonb null,
      advertise_tags jsonb null,
      updated_by text null,
      updated_at timestamptz not null default now()
    )`);
    // The arguments name the sealed columns. A managed-key value (v2.<kid>.…) needs its key row not
    // retired; the row is share-locked until the writer commits, so retirement (which locks the rows
    // it retires, then verifies nothing is left under them) either sees the write or refuses it.
    this.addSql(`create function refuse_retired_secret_key() returns trigger language plpgsql as $fn$
      declare
        col text;
        val text;
        key_id text;
        key_status text;
      begin
        foreach col in array tg_argv loop
          execute format('select ($1).%I::text', col) into val using new;
          if val like 'v2.%' then
            key_id := split_part(val, '.', 2);
            select status into key_status from secret_keys where kid = key_id for share;
            if key_status is null or key_status = 'retired' then
              raise exception 'secret in %.% is sealed under encryption key %, which is retired or unknown', tg_table_name, col, key_id
                using errcode = 'P0001', hint = 'refresh the keyring and seal again';
            end if;
          end if;
        end loop;
        return new;
      end
    $fn$`);
    this.addSql(`create trigger crm_connections_sealed_key before insert or update on crm_connections
      for each row execute function refuse_retired_secret_key('secrets_sealed', 'tokens_sealed', 'oauth_pending_sealed')`);
    this.addSql(`create trigger mesh_settings_sealed_key before insert or update on mesh_settings
      for each row execute function refuse_retired_secret_key('auth_key_sealed')`);
  }
}
