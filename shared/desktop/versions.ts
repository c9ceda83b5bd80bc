// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).

/**
 * Desktop app versions (spec, Versioning 5). A version is dotted numbers with an optional named-build
 * suffix `-<n>` (`1.4.0-3`); it displays with a `d` instead of the dash (`1.4.0d3`), any other string
 * is shown unchanged. Comparison is numeric part by part, then by build number (no suffix = build 0);
 * a string that is not such a version compares as unknown (null), and unknown never locks the app.
 */
const VERSION = /^v?(\d+(?:\.\d+)*)(?:-(\d+))?$/;

export function displayVersion(version: string): string {
  const m = VERSION.exec(version);
  if (!m || m[2] === undefined) return version;
  return `${version.slice(0, version.lastIndexOf('-'))}d${m[2]}`;
}

function parse(version: string): { parts: number[]; build: number } | null {
  const m = VERSION.exec(version.trim());
  if (!m) return null;
  return { parts: m[1]!.split('.').map(Number), build: m[2] === undefined ? 0 : Number(m[2]) };
}

/** Negative when `a` is older than `b`, 0 when equal, positive when newer; null when either is not a version. */
export function compareVersions(a: string, b: string): number | null {
  const pa = parse(a);
  const pb = parse(b);
  if (!pa || !pb) return null;
  const n = Math.max(pa.parts.length, pb.parts.length);
  for (let i = 0; i < n; i++) {
    const d = (pa.parts[i] ?? 0) - (pb.parts[i] ?? 0);
    if (d !== 0) return d;
  }
  return pa.build - pb.build;
}

/** The provisioner's version policy (spec, Versioning 5). */
export interface VersionPolicy {
  min_version: string | null;
  recommended_version: string | null;
  message: string | null;
  download_url: string | null;
}

export interface VersionNotice {
  min_version: string | null;
  recommended_version: string | null;
  current_version: string;
  message: string | null;
  download_url: string | null;
}

/**
 * What a policy means for the running app: `required` (the app is locked until it updates) when the
 * current version is older than `min_version`; otherwise `available` when it is older than
 * `recommended_version` (no lock). Versions are shown in display form.
 */
export function evaluatePolicy(
  policy: VersionPolicy | null,
  currentVersion: string | null,
): { required: VersionNotice | null; available: VersionNotice | null } {
  if (!policy || !currentVersion) return { required: null, available: null };
  const notice: VersionNotice = {
    min_version: policy.min_version === null ? null : displayVersion(policy.min_version),
    recommended_version: policy.recommended_version === null ? null : displayVersion(policy.recommended_version),
    current_version: displayVersion(currentVersion),
    message: policy.message,
    download_url: policy.download_url,
  };
  const belowMin = policy.min_version !== null && (compareVersions(currentVersion, policy.min_version) ?? 0) < 0;
  if (belowMin) return { required: notice, available: null };
  const belowRecommended =
    policy.recommended_version !== null && (compareVersions(currentVersion, policy.recommended_version) ?? 0) < 0;
  return { required: null, available: belowRecommended ? notice : null };
}
