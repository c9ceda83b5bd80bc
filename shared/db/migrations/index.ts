import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000000Backbone } from './Migration20261122000000Backbone.js';

/** Checked-in migrations, oldest first. Listed explicitly so no file globbing is needed at run time. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261122000000Backbone', class: Migration20261122000000Backbone },
];
