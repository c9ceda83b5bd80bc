import { describe, expect, it } from 'vitest';
import { checkAddress, checkHostName, classifyAddress, EgressError } from '../../shared/http/egress-policy.js';

const closed = { allowPrivate: false, allowLoopback: false };
const refused = (addr: string, policy = closed) => {
  try {
    checkAddress(addr, policy);
  } catch (err) {
    expect(err).toBeInstanceOf(EgressError);
    expect((err as EgressError).code).toBe('egress_refused');
    return (err as EgressError).message;
  }
  return null;
};

describe('egress address policy', () => {
  it.each([
    ['169.254.169.254', 'metadata'],
    ['0xa9.0xfe.0xa9.0xfe', 'metadata'],
    ['2852039166', 'metadata'],
    ['0251.0376.0251.0376', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['64:ff9b::a9fe:a9fe', 'metadata'], // NAT64 of 169.254.169.254
    ['2002:a9fe:a9fe::1', 'metadata'], // 6to4 of 169.254.169.254
    ['64:ff9b::10.0.0.1', 'private'],
    ['224.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['ff02::1', 'reserved'],
    ['fec0::1', 'private'],
    ['169.254.1.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['2130706433', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['172.32.0.1', 'public'],
    ['8.8.8.8', 'public'],
    ['2001:4860:4860::8888', 'public'],
  ])('%s is %s', (addr, cls) => {
    expect(classifyAddress(addr)).toBe(cls);
  });

  it('never allows metadata or link-local, whatever the deployment allows', () => {
    const open = { allowPrivate: true, allowLoopback: true };
    expect(refused('169.254.169.254', open)).toBe(
      'address 169.254.169.254 is link-local (cloud metadata); outbound requests to it are never allowed',
    );
    expect(refused('fe80::1', open)).toMatch(/link-local/);
    expect(refused('0.0.0.0', open)).toMatch(/unspecified/);
    expect(refused('239.1.2.3', open)).toMatch(/multicast or reserved/);
    expect(refused('64:ff9b::a9fe:a9fe', open)).toMatch(/cloud metadata/);
    expect(() => checkHostName('metadata.google.internal.')).toThrow(EgressError);
  });

  it('allows private ranges only with allowPrivate and loopback with either setting', () => {
    expect(refused('10.0.0.1')).toMatch(/PLATFORM_EGRESS_ALLOW_PRIVATE/);
    expect(refused('10.0.0.1', { allowPrivate: false, allowLoopback: true })).toMatch(/private/);
    expect(refused('10.0.0.1', { allowPrivate: true, allowLoopback: false })).toBeNull();
    expect(refused('127.0.0.1')).toMatch(/loopback/);
    expect(refused('127.0.0.1', { allowPrivate: false, allowLoopback: true })).toBeNull();
    expect(refused('93.184.216.34')).toBeNull();
  });
});
