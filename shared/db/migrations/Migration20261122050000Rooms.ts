import { Migration } from '@mikro-orm/migrations';

/** Gateway rooms: shared spaces where signed-in callers (and their agents) post messages. */
export class Migration20261122050000Rooms extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table gateway_rooms (
      id text primary key,
      tenant text not null,
      name text not null,
      topic text null,
      created_by text not null,
      created_at timestamptz not null
    )`);
    this.addSql(`create unique index gateway_rooms_tenant_name_idx on gateway_rooms (tenant, lower(name))`);
    this.addSql(`create table gateway_room_members (
      room_id text not null references gateway_rooms (id) on delete cascade,
      member_id text not null,
      member_label text not null,
      joined_at timestamptz not null,
      primary key (room_id, member_id)
    )`);
    this.addSql(`create table gateway_room_messages (
      seq bigserial primary key,
      room_id text not null references gateway_rooms (id) on delete cascade,
      author_id text not null,
      author_label text not null,
      content text not null,
      created_at timestamptz not null
    )`);
    this.addSql(`create index gateway_room_messages_room_idx on gateway_room_messages (room_id, seq)`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists gateway_room_messages');
    this.addSql('drop table if exists gateway_room_members');
    this.addSql('drop table if exists gateway_rooms');
  }
}
