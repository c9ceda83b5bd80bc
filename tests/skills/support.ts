import { startOidcStack, type OidcStack, type OidcStackOptions, type People } from '../helpers/oidc-stack.js';

/** The skill suites' stack: OIDC sign-in, runtime skills read from `skillsDir`; `options.env` adds to the settings. */
export function startSkillsStack<K extends string = People>(
  skillsDir: string,
  options: OidcStackOptions<K> = {},
): Promise<OidcStack<K>> {
  return startOidcStack<K>({
    dataDirPrefix: 'skills-test-',
    ...options,
    env: { PLATFORM_SKILLS_DIR: skillsDir, ...options.env },
  });
}
