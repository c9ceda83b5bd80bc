import { describe, expect, it } from 'vitest';
import {
  ETL_OUTPUT_HEAD_BYTES,
  ETL_OUTPUT_TAIL_BYTES,
  jobEnvironment,
  launcherArgs,
  OutputCapture,
} from '../../shared/etl/launch.js';
import { componentRole } from '../../shared/etl/project.js';
import { pageOutput } from '../../shared/etl/runs.js';

describe('ETL output capture', () => {
  it('keeps everything up to the cap', () => {
    const c = new OutputCapture();
    c.push(Buffer.from('a'.repeat(ETL_OUTPUT_HEAD_BYTES)));
    c.push(Buffer.from('b'.repeat(ETL_OUTPUT_TAIL_BYTES)));
    expect(c.truncated).toBe(false);
    expect(c.text()).toHaveLength(ETL_OUTPUT_HEAD_BYTES + ETL_OUTPUT_TAIL_BYTES);
  });

  it('past the cap keeps the head and the last bytes, and says how many were dropped', () => {
    const c = new OutputCapture();
    c.push(Buffer.from('H'.repeat(ETL_OUTPUT_HEAD_BYTES)));
    for (let i = 0; i < 50; i++) c.push(Buffer.from('m'.repeat(10_000)));
    c.push(Buffer.from('T'.repeat(ETL_OUTPUT_TAIL_BYTES)));
    expect(c.truncated).toBe(true);
    expect(c.bytesSeen).toBe(ETL_OUTPUT_HEAD_BYTES + 500_000 + ETL_OUTPUT_TAIL_BYTES);
    const text = c.text();
    expect(text.startsWith('H'.repeat(ETL_OUTPUT_HEAD_BYTES) + '\n[… 500000 bytes of output omitted …]\n')).toBe(true);
    expect(text.endsWith('T'.repeat(ETL_OUTPUT_TAIL_BYTES))).toBe(true);
  });

  it('pages by characters with next_offset until the end', () => {
    const meta = { bytes_seen: 10, truncated: false };
    expect(pageOutput('0123456789', meta, 0, 4)).toMatchObject({ text: '0123', next_offset: 4, total_chars: 10 });
    expect(pageOutput('0123456789', meta, 8, 4)).toMatchObject({ text: '89', next_offset: null });
    expect(pageOutput('0123456789', meta, 50, 4)).toMatchObject({ text: '', offset: 10, next_offset: null });
  });
});

describe('ETL job environment and arguments', () => {
  it('passes only PATH, locale, trust store, proxy, JAVA_HOME and HOME', () => {
    const env = jobEnvironment(
      { user: 'platform-etl', uid: 999, gid: 999, home: '/home/platform-etl' },
      {
        PATH: '/usr/bin',
        LANG: 'C.UTF-8',
        LC_ALL: 'C',
        SSL_CERT_FILE: '/etc/ssl/cert.pem',
        https_proxy: 'http://p:3128',
        NO_PROXY: 'localhost',
        JAVA_HOME: '/opt/java',
        HOME: '/root',
        DATABASE_URL: 'postgres://secret',
        PLATFORM_SECRETS_KEY: 'k',
        AWS_SECRET_ACCESS_KEY: 'x',
      },
    );
    expect(env).toEqual({
      PATH: '/usr/bin',
      LANG: 'C.UTF-8',
      LC_ALL: 'C',
      SSL_CERT_FILE: '/etc/ssl/cert.pem',
      https_proxy: 'http://p:3128',
      NO_PROXY: 'localhost',
      JAVA_HOME: '/opt/java',
      HOME: '/home/platform-etl',
    });
    expect(jobEnvironment(null, { HOME: '/srv/app' })).toEqual({
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/srv/app',
    });
  });

  it('turns context parameters into Talend launcher arguments, one argv entry each', () => {
    expect(launcherArgs('Prod', { a: 'x y', b: '$(id)' })).toEqual([
      '--context=Prod',
      '--context_param',
      'a=x y',
      '--context_param',
      'b=$(id)',
    ]);
    expect(launcherArgs(undefined, {})).toEqual([]);
  });

  it('classifies components by their names', () => {
    expect(componentRole('tMysqlInput')).toBe('input');
    expect(componentRole('tFileOutputDelimited')).toBe('output');
    expect(componentRole('tPostgresqlRow')).toBe('output');
    expect(componentRole('tSalesforceOutput')).toBe('output');
    expect(componentRole('tFilterRow')).toBe('transform');
    expect(componentRole('tLogRow')).toBe('other');
  });
});
