import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { NotFoundError } from '../errors.js';

/** A job of the project's `process/` folder (`process/<folders>/<Name>_<version>.item`). */
export interface ProjectJob {
  name: string;
  version: string;
  /** The folder under `process/` ('' at its root). */
  folder: string;
  /** The `.item` file, relative to the project root. */
  path: string;
}

export type ComponentRole = 'input' | 'output' | 'transform' | 'other';

export interface ComponentDescription {
  name: string;
  component: string;
  role: ComponentRole;
  /** What the component reads (files, tables, endpoints) and writes, as the job states them (Java expressions). */
  reads: string[];
  writes: string[];
  /** The settings that name a location (file, host, database, table, URL, query). */
  settings: Record<string, string>;
  /** Context variables its settings use. */
  context_refs: string[];
}

export interface JobDescription {
  name: string;
  version: string;
  path: string;
  purpose: string | null;
  description: string | null;
  contexts: Array<{
    name: string;
    parameters: Array<{ name: string; type: string; value: string; prompt: string | null }>;
  }>;
  components: ComponentDescription[];
  connections: Array<{ source: string; target: string; kind: string; label: string | null }>;
  reads: string[];
  writes: string[];
  /** True when a component writes outside the job's local files (a database, an API, a remote service). */
  writes_to_customer_systems: boolean;
}

const ITEM = /^(.+)_(\d+(?:\.\d+)*)\.item$/;
/** Element parameters that name where a component reads or writes. */
const LOCATION_PARAMS = [
  'FILENAME',
  'FILE_NAME',
  'DIRECTORY',
  'REMOTEDIR',
  'HOST',
  'PORT',
  'DBNAME',
  'SCHEMA_DB',
  'TABLE',
  'TABLENAME',
  'QUERY',
  'URL',
  'ENDPOINT',
  'MODULENAME',
];
const DB_ROW =
  /^t(DB|Mysql|Oracle|Postgresql|MSSql|Snowflake|Redshift|Teradata|DB2|Sybase|Informix|Hive|Impala|JDBC|AS400)Row$/;
const MASK = '********';

/** The role a component plays, from its component name (Talend's naming conventions). */
export function componentRole(component: string): ComponentRole {
  if (/^tLog(Row|Catcher)$|^tStatCatcher$|^tFlowMeterCatcher$/.test(component)) return 'other';
  if (/Input|^tFileList$|^tFileExist$|Get$|Receive$/.test(component)) return 'input';
  if (/Output|Put$|Delete$|Commit$|SCD$|^tRESTClient$|^tSendMail$/.test(component) || DB_ROW.test(component))
    return 'output';
  if (
    /^t(Map|FilterRow|Join|AggregateRow|SortRow|UniqRow|Normalize|Denormalize|Replace|ConvertType|Java|JavaRow|JavaFlex|XMLMap|Unite|Replicate)$/.test(
      component,
    )
  )
    return 'transform';
  return 'other';
}

/** Local files are the job's own work area; anything else an output touches is a customer system. */
function writesOutsideLocalFiles(c: ComponentDescription): boolean {
  return c.role === 'output' && !/^tFile/.test(c.component);
}

async function walkItems(dir: string, base: string): Promise<string[]> {
  const out: string[] = [];
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, e.name);
    if (e.isDirectory() && !e.name.startsWith('.')) out.push(...(await walkItems(full, base)));
    else if (e.isFile() && ITEM.test(e.name)) out.push(path.relative(base, full));
  }
  return out;
}

/** The jobs of a project, from its `process/` folder (every version of each). */
export async function listProjectJobs(projectPath: string): Promise<ProjectJob[]> {
  const files = await walkItems(path.join(projectPath, 'process'), projectPath);
  return files.map((rel) => {
    const m = ITEM.exec(path.basename(rel))!;
    const folder = path.dirname(path.relative('process', rel));
    return { name: m[1]!, version: m[2]!, folder: folder === '.' ? '' : folder, path: rel.split(path.sep).join('/') };
  });
}

const compareVersions = (a: string, b: string) => {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d) return d;
  }
  return 0;
};

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  removeNSPrefix: true,
  parseAttributeValue: false,
  parseTagValue: false,
  isArray: (name) =>
    ['context', 'contextParameter', 'node', 'elementParameter', 'connection', 'metadata', 'column'].includes(name),
});

type Attrs = Record<string, unknown>;
const str = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : String(v));
const list = (v: unknown): Attrs[] => (Array.isArray(v) ? (v as Attrs[]) : []);

/** A Java string literal `"x"` shown as x; an expression is shown as written. */
function literal(value: string): string {
  const m = /^"((?:[^"\\]|\\.)*)"$/.exec(value.trim());
  return m ? m[1]!.replace(/\\(.)/g, '$1') : value.trim();
}

function describeComponent(node: Attrs): ComponentDescription {
  const component = str(node.componentName);
  const params = new Map(list(node.elementParameter).map((p) => [str(p.name), str(p.value)]));
  const settings: Record<string, string> = {};
  for (const key of LOCATION_PARAMS) {
    const v = params.get(key);
    if (v !== undefined && v.trim() !== '' && v.trim() !== '""') settings[key] = literal(v);
  }
  const refs = new Set<string>();
  for (const v of Object.values(settings)) for (const m of v.matchAll(/context\.(\w+)/g)) refs.add(m[1]!);
  const role = componentRole(component);
  const target = locationOf(settings);
  return {
    name: params.get('UNIQUE_NAME') ?? component,
    component,
    role,
    reads: role === 'input' && target ? [target] : [],
    writes: role === 'output' && target ? [target] : [],
    settings,
    context_refs: [...refs].sort(),
  };
}

/** One readable location: a file, a URL, or host/database.table. */
function locationOf(s: Record<string, string>): string | null {
  if (s.FILENAME ?? s.FILE_NAME) return (s.FILENAME ?? s.FILE_NAME)!;
  if (s.URL ?? s.ENDPOINT) return (s.URL ?? s.ENDPOINT)!;
  const table = s.TABLE ?? s.TABLENAME ?? s.MODULENAME;
  const db = [s.HOST, s.DBNAME ?? s.SCHEMA_DB].filter(Boolean).join('/');
  if (db || table) return [db, table].filter(Boolean).join(db && table ? '.' : '');
  if (s.QUERY) return `query ${s.QUERY}`;
  return s.DIRECTORY ?? s.REMOTEDIR ?? null;
}

async function readProperties(itemFile: string): Promise<{ purpose: string | null; description: string | null }> {
  try {
    const xml = await readFile(itemFile.replace(/\.item$/, '.properties'), 'utf8');
    const doc = parser.parse(xml) as Attrs;
    const prop = ((doc.XMI as Attrs | undefined)?.Property ?? doc.Property) as Attrs | undefined;
    return { purpose: str(prop?.purpose) || null, description: str(prop?.description) || null };
  } catch {
    return { purpose: null, description: null };
  }
}

/**
 * Parses a job's `.item` file (the newest version unless `version` is given) into what an agent
 * needs: components with where each reads or writes, their connections, and the context variables
 * (password values masked).
 */
export async function describeProjectJob(projectPath: string, name: string, version?: string): Promise<JobDescription> {
  const versions = (await listProjectJobs(projectPath)).filter((j) => j.name === name);
  const job = version
    ? versions.find((j) => j.version === version)
    : versions.sort((a, b) => compareVersions(b.version, a.version))[0];
  if (!job)
    throw new NotFoundError(
      `No job named ${name}${version ? ` in version ${version}` : ''} in the project's process/ folder.`,
      {
        reason: 'etl_job_not_found',
        job_name: name,
      },
    );
  const file = path.join(projectPath, job.path);
  const doc = parser.parse(await readFile(file, 'utf8')) as Attrs;
  const proc = (doc.ProcessType ?? {}) as Attrs;
  const components = list(proc.node).map(describeComponent);
  const connections = list(proc.connection).map((c) => ({
    source: str(c.source),
    target: str(c.target),
    kind: str(c.connectorName) || str(c.lineStyle),
    label: str(c.label) || null,
  }));
  const contexts = list(proc.context).map((ctx) => ({
    name: str(ctx.name),
    parameters: list(ctx.contextParameter).map((p) => ({
      name: str(p.name),
      type: str(p.type),
      value: /password/i.test(str(p.type)) ? MASK : str(p.value),
      prompt: str(p.prompt) || null,
    })),
  }));
  const reads = [...new Set(components.flatMap((c) => c.reads))];
  const writes = [...new Set(components.flatMap((c) => c.writes))];
  return {
    name: job.name,
    version: job.version,
    path: job.path,
    ...(await readProperties(file)),
    contexts,
    components,
    connections,
    reads,
    writes,
    writes_to_customer_systems: components.some(writesOutsideLocalFiles),
  };
}
