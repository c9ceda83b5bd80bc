/**
 * A Talend-style ETL project (`talend.project`, `process/**\/*.item` with `.properties`) and built
 * jobs shipped as zips with shell launchers, unzipped into a `jobs_dir` as an operator would:
 *   ExportReport   reads a file, writes a local spreadsheet; prints its user, arguments and environment
 *   LoadCustomers  reads a file, writes a PostgreSQL table (a customer system); fails with exit code 3
 *   Chatty         writes about 2.8 MB of output
 *   Hang           starts a grandchild `sleep` and waits (killed by the timeout)
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ETL_SANDBOX_USER } from '../../shared/etl/launch.js';
import { unzip, zip } from './zip.js';

const XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>';
const NS =
  'xmi:version="2.0" xmlns:xmi="http://www.omg.org/XMI" xmlns:talendfile="platform:/resource/org.talend.model/model/TalendFile.xsd"';

const param = (name: string, value: string, field = 'TEXT') =>
  `<elementParameter field="${field}" name="${name}" value="${value.replace(/"/g, '&quot;')}"/>`;
const node = (component: string, unique: string, params: string[] = []) =>
  `<node componentName="${component}" componentVersion="0.102" offsetLabelX="0" offsetLabelY="0" posX="100" posY="100">
    ${param('UNIQUE_NAME', unique)}
    ${params.join('\n    ')}
    <metadata connector="FLOW" name="${unique}"><column key="false" name="id" nullable="true" type="id_Integer"/></metadata>
  </node>`;
const connection = (kind: string, label: string, source: string, target: string) =>
  `<connection connectorName="${kind}" label="${label}" lineStyle="0" metaname="${source}" offsetLabelX="0" offsetLabelY="0" source="${source}" target="${target}"/>`;
const item = (contexts: string, body: string[]) =>
  `${XML_HEAD}\n<talendfile:ProcessType ${NS} defaultContext="Default" jobType="Standard">\n${contexts}\n${body.join('\n')}\n</talendfile:ProcessType>\n`;
const properties = (label: string, version: string, purpose: string) =>
  `${XML_HEAD}\n<xmi:XMI ${NS} xmlns:TalendProperties="http://www.talend.org/properties"><TalendProperties:Property label="${label}" version="${version}" purpose="${purpose}" description="${purpose} (fixture)"/></xmi:XMI>\n`;

const CUSTOMER_CONTEXTS = `<context confirmationNeeded="false" name="Default">
    <contextParameter comment="" name="input_dir" prompt="Input folder?" promptNeeded="false" type="id_Directory" value="/data/in"/>
    <contextParameter comment="" name="db_host" prompt="" promptNeeded="false" type="id_String" value="crm-db.internal"/>
    <contextParameter comment="" name="db_password" prompt="" promptNeeded="false" type="id_Password" value="enc:system.encryption.key.v1:c2VjcmV0"/>
  </context>
  <context confirmationNeeded="false" name="Production">
    <contextParameter comment="" name="input_dir" prompt="" promptNeeded="false" type="id_Directory" value="/srv/in"/>
  </context>`;

export const PROJECT_ITEMS: Record<string, string> = {
  'process/Customers/LoadCustomers_0.1.item': item(CUSTOMER_CONTEXTS, [
    node('tFileInputDelimited', 'tFileInputDelimited_1', [param('FILENAME', '"/data/in/old.csv"', 'FILE')]),
    node('tLogRow', 'tLogRow_1'),
    connection('FLOW', 'row1', 'tFileInputDelimited_1', 'tLogRow_1'),
  ]),
  'process/Customers/LoadCustomers_0.2.item': item(CUSTOMER_CONTEXTS, [
    node('tFileInputDelimited', 'tFileInputDelimited_1', [
      param('FILENAME', 'context.input_dir + "/customers.csv"', 'FILE'),
      param('FIELDSEPARATOR', '";"'),
    ]),
    node('tMap', 'tMap_1'),
    node('tPostgresqlOutput', 'tPostgresqlOutput_1', [
      param('HOST', 'context.db_host'),
      param('DBNAME', '"crm"'),
      param('TABLE', '"customers"'),
      param('PASS', 'context.db_password', 'PASSWORD'),
    ]),
    node('tLogRow', 'tLogRow_1'),
    connection('FLOW', 'row1', 'tFileInputDelimited_1', 'tMap_1'),
    connection('FLOW', 'out1', 'tMap_1', 'tPostgresqlOutput_1'),
    connection('REJECT', 'rejects', 'tPostgresqlOutput_1', 'tLogRow_1'),
  ]),
  'process/ExportReport_0.1.item': item(
    `<context confirmationNeeded="false" name="Default">
    <contextParameter comment="" name="out_dir" prompt="" promptNeeded="false" type="id_Directory" value="/data/out"/>
  </context>`,
    [
      node('tFileInputDelimited', 'tFileInputDelimited_1', [param('FILENAME', '"/data/in/sales.csv"', 'FILE')]),
      node('tFileOutputExcel', 'tFileOutputExcel_1', [param('FILENAME', 'context.out_dir + "/report.xlsx"', 'FILE')]),
      connection('FLOW', 'row1', 'tFileInputDelimited_1', 'tFileOutputExcel_1'),
    ],
  ),
};

const LAUNCHERS: Record<string, string> = {
  ExportReport: `#!/bin/sh
echo "ExportReport starting"
echo "user=$(id -un)"
for a in "$@"; do echo "arg:$a"; done
env | sort | sed 's/^/env:/'
echo "ExportReport done"
`,
  LoadCustomers: `#!/bin/sh
echo "LoadCustomers connecting"
echo "ERROR: could not connect to the database" >&2
exit 3
`,
  Chatty: `#!/bin/sh
i=0
while [ $i -lt 40000 ]; do
  echo "line $i of a chatty job that writes a great deal of output to its console"
  i=$((i+1))
done
echo "chatty end"
`,
  Hang: `#!/bin/sh
echo "Hang starting"
sleep 300 &
echo "grandchild=$!"
wait
`,
};

export interface EtlFixture {
  root: string;
  projectPath: string;
  jobsDir: string;
  /** The zips as built (name → bytes). */
  zips: Record<string, Buffer>;
  cleanup(): void;
}

/** Makes sure jobs can run as the sandbox user when the tests run as root (as a container image would). */
export function ensureSandboxUser(): void {
  if (process.getuid?.() !== 0) return;
  if (
    readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .some((l) => l.startsWith(`${ETL_SANDBOX_USER}:`))
  )
    return;
  execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', ETL_SANDBOX_USER]);
}

export function makeEtlFixture(): EtlFixture {
  const root = mkdtempSync(path.join(tmpdir(), 'etl-fixture-'));
  // mkdtemp makes a 0700 folder; the sandbox user must be able to read jobs_dir.
  chmodSync(root, 0o755);
  const projectPath = path.join(root, 'project');
  mkdirSync(path.join(projectPath, 'process'), { recursive: true });
  writeFileSync(
    path.join(projectPath, 'talend.project'),
    `${XML_HEAD}\n<xmi:XMI ${NS} xmlns:TalendProperties="http://www.talend.org/properties"><TalendProperties:Project label="ACME_DATA" technicalLabel="ACME_DATA" language="java" productVersion="8.0.1"/></xmi:XMI>\n`,
  );
  for (const [rel, xml] of Object.entries(PROJECT_ITEMS)) {
    const file = path.join(projectPath, rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, xml);
    const m = /([^/]+)_(\d+\.\d+)\.item$/.exec(rel)!;
    writeFileSync(file.replace(/\.item$/, '.properties'), properties(m[1]!, m[2]!, `Purpose of ${m[1]}`));
  }
  const jobsDir = path.join(root, 'jobs');
  mkdirSync(jobsDir, { mode: 0o755 });
  const zips: Record<string, Buffer> = {};
  for (const [name, script] of Object.entries(LAUNCHERS)) {
    zips[name] = zip([
      { name: `${name}/${name}_run.sh`, data: script, mode: 0o755 },
      { name: `${name}/jobInfo.properties`, data: `job=${name}\njobVersion=0.1\ncontextName=Default\n` },
      { name: `${name}/lib/README.txt`, data: 'libraries of the built job\n' },
    ]);
    // One build unzipped into a folder of its own, the others straight into jobs_dir: both layouts occur.
    unzip(zips[name]!, name === 'ExportReport' ? path.join(jobsDir, 'ExportReport_0.1') : jobsDir);
  }
  execFileSync('chmod', ['-R', 'a+rX', root]);
  return { root, projectPath, jobsDir, zips, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}
