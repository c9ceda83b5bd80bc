// Query helpers both the chunk store and the vector store use (a leaf module, so neither imports the other).

/** Spec Limits: internal chunk reads in pages of 2000. */
export const CHUNK_PAGE = 2000;

/** A PostgreSQL array literal (knex would expand a JS array bound to `?` into a list). */
export const pgArray = (values: ReadonlyArray<string | number>) => `{${values.join(',')}}`;
