import { column } from './table.js';

/**
 * Column groups that every run of a local process group holds (ETL runs, code-agent runs): spread into
 * the run's table where they stand, so the columns keep their table order. Each call builds fresh options:
 * MikroORM binds a column's type object to the one property it maps.
 */

/** The output the runner kept: capped text, the bytes the process wrote, and whether the cap cut it. */
export const capturedOutputColumns = () => ({
  output: column.text(),
  outputBytes: column.bigNumber(),
  outputTruncated: column.boolean(),
});

/** Where the run's process group runs, so the worker that marks a run interrupted can end it. */
export const processGroupColumns = () => ({
  workerHost: column.string().nullable(),
  processId: column.integer().nullable(),
});

/** Who asked for the run and when it was asked for, started, ended and last written. */
export const runTimeColumns = () => ({
  requestedBy: column.string(),
  createdAt: column.date(),
  startedAt: column.date().nullable(),
  finishedAt: column.date().nullable(),
  updatedAt: column.date(),
});
