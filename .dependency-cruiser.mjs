// The folder direction of docs/architecture.md, checked: `npm run lint` runs `npm run lint:deps`
// (depcruise with these rules), which fails naming each offending edge. Type-only imports count
// (tsPreCompilationDeps), so a cycle or a wrong direction made of `import type` fails too.
// tests/ is cruised as well: the cycle rule holds there; tests may import anything else (the other rules
// name only product folders). No exception: shared/temporal/workflow-refs.ts types `workflowRef` from
// the workflows/*-definitions.ts modules, never from workflow code, so no cycle runs through it.

export default {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycle, value or type-only: split the shared piece into a module both sides import.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'shared-stays-below',
      severity: 'error',
      comment: 'shared/ imports neither api/ nor activities/ nor worker/: move the piece to shared/<area>/.',
      from: { path: '^shared/' },
      to: { path: '^(api|activities|worker)/' },
    },
    {
      name: 'activities-not-to-api',
      severity: 'error',
      comment: 'activities/ never imports api/: move what both need to shared/<area>/.',
      from: { path: '^activities/' },
      to: { path: '^api/' },
    },
    {
      name: 'api-only-from-entry-points',
      severity: 'error',
      comment:
        'Only the API itself and entry points (scripts/, bench/, tests/) import api/: nothing the worker loads lives under api/.',
      from: { pathNot: '^(api|scripts|bench|tests)/' },
      to: { path: '^api/' },
    },
    {
      name: 'workflows-not-to-io-layers',
      severity: 'error',
      comment:
        'Workflow code loads workflows/ and workflow-safe shared/ modules only (scripts/check-workflow-imports.mjs checks the rest); typing activities is allowed.',
      from: { path: '^workflows/' },
      to: { path: '^(api|activities|worker|etl-runner|scripts)/', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|\\.tools|\\.data|coverage)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
