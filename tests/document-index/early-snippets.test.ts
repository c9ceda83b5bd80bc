/**
 * SEARCH's snippets written early (while PostgreSQL runs the statement, for the lexemes the query is expected
 * to have): used only for the lexemes the answer reports and the text the row has; otherwise `headline`
 * writes the snippet from the answer's lexemes. PostgreSQL's own lexemes and snippets are compared with these
 * in headline.test.ts and search-scale.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { guessQueryLexemes, headline, tsqueryLexemes } from '../../shared/document-index/headline.js';
import { EarlyRows, earlySnippets, snippetWriter, type EarlySnippets } from '../../shared/document-index/search.js';

const TEXTS: Record<string, string> = {
  c1: 'Every backup of the scratch database is restored on Mondays, and the restore is checked.',
  c2: 'Indexes are rebuilt at night; nothing here mentions the weekly drill.',
};
const rowOf = (id: string) => (id in TEXTS ? { text: TEXTS[id]! } : undefined);
/** Early snippets marked, so a test can tell them from the ones `headline` writes. */
const marked = (early: EarlySnippets): EarlySnippets => ({
  lexemes: early.lexemes,
  snippets: new Map([...early.snippets].map(([id, s]) => [id, { text: s.text, snippet: `early: ${s.snippet}` }])),
});

describe('early snippets', () => {
  it("are written for the vector ranking's rows the cache holds, with the query's guessed lexemes", () => {
    const early = earlySnippets(
      'Backups restored',
      [
        { id: 'c1', sim: 0.9 },
        { id: 'gone', sim: 0.5 },
      ],
      rowOf,
    )!;
    expect([...early.lexemes]).toEqual(['backup', 'restor']);
    expect([...early.snippets.keys()]).toEqual(['c1']);
    expect(early.snippets.get('c1')).toEqual({ text: TEXTS.c1, snippet: headline(TEXTS.c1!, early.lexemes) });
    expect(early.snippets.get('c1')!.snippet).toContain('<b>backup</b>');
    expect(earlySnippets('?! …', [{ id: 'c1', sim: 0.9 }], rowOf)).toBeNull();
  });

  it("serve a row only for the answer's lexemes and the row's text; otherwise headline writes it", () => {
    const early = marked(earlySnippets('backups restored', [{ id: 'c1', sim: 0.9 }], rowOf)!);
    const answer = tsqueryLexemes("'backup' | 'restor'");
    const write = snippetWriter(answer, early);
    expect(write('c1', TEXTS.c1!)).toBe(`early: ${headline(TEXTS.c1!, answer)}`);
    // Not written early: the fusion kept a row the vector ranking did not rank high.
    expect(write('c2', TEXTS.c2!)).toBe(headline(TEXTS.c2!, answer));
    // The row's text is not the one written for (a change the answer carried).
    const changed = 'A backup is restored weekly.';
    expect(write('c1', changed)).toBe(headline(changed, answer));
    // Other lexemes, or one named by more operands, than guessed: none of the early snippets serves.
    for (const other of ["'backup' | 'restor' | 'monday'", "'backup'", "'backup' | 'backup' | 'restor'"]) {
      const terms = tsqueryLexemes(other);
      expect(snippetWriter(terms, early)('c1', TEXTS.c1!), other).toBe(headline(TEXTS.c1!, terms));
    }
    expect(snippetWriter(answer, null)('c1', TEXTS.c1!)).toBe(headline(TEXTS.c1!, answer));
  });

  it('guess a word named twice as two operands, as to_tsquery prints it', () => {
    const lexemes = guessQueryLexemes(['restore', 'restored']);
    expect([...lexemes]).toEqual(['restor']);
    expect(lexemes.operands.get('restor')).toBe(2);
    const early = marked(earlySnippets('restore restored', [{ id: 'c1', sim: 0.9 }], rowOf)!);
    const answer = tsqueryLexemes("'restor' | 'restor'");
    expect(snippetWriter(answer, early)('c1', TEXTS.c1!)).toBe(`early: ${headline(TEXTS.c1!, answer)}`);
  });

  describe('how many are written (EarlyRows)', () => {
    const hits = Array.from({ length: 50 }, (_, i) => ({ id: `v${i + 1}`, sim: 1 - i / 100 }));
    /** An answer of 10 rows: the vector ranking's first `fromVector`, then rows only the lexical ranking found. */
    const answer = (fromVector: number) => [
      ...hits.slice(0, fromVector),
      ...Array.from({ length: 10 - fromVector }, (_, i) => ({ id: `lex${i}` })),
    ];

    it("are the whole answer's worth at first, and while the vector ranking's second half is returned", () => {
      const rows = new EarlyRows();
      expect(rows.count(10)).toBe(10);
      for (let s = 0; s < 50; s++) rows.learn(hits, answer(10), 10);
      expect(rows.count(10)).toBe(10);
      expect(rows.count(5)).toBe(5);
    });

    it('fall to the first half once the second half is seldom returned, and come back when it is again', () => {
      const rows = new EarlyRows();
      let searches = 0;
      while (rows.count(10) === 10 && searches < 100) {
        rows.learn(hits, answer(5), 10); // ranks 6 to 10 never returned
        searches++;
      }
      expect(rows.count(10)).toBe(5);
      expect(rows.count(7)).toBe(4);
      expect(searches).toBeGreaterThan(5); // a moving average: one search does not decide it
      expect(searches).toBeLessThan(20);
      // One search in ten returning them all (a share of 0.1) keeps it at the first half.
      for (let s = 0; s < 100; s++) rows.learn(hits, answer(s % 10 === 0 ? 10 : 5), 10);
      expect(rows.count(10)).toBe(5);
      searches = 0;
      while (rows.count(10) === 5 && searches < 100) {
        rows.learn(hits, answer(10), 10);
        searches++;
      }
      expect(rows.count(10)).toBe(10);
      expect(searches).toBeLessThan(10);
    });

    it('settle by the share of the second half returned: from 0.3 up it is written early', () => {
      // Two of ranks 6 to 10 returned in every search (0.4), then one (0.2).
      const rows = new EarlyRows();
      for (let s = 0; s < 100; s++) rows.learn(hits, answer(7), 10);
      expect(rows.count(10)).toBe(10);
      for (let s = 0; s < 100; s++) rows.learn(hits, answer(6), 10);
      expect(rows.count(10)).toBe(5);
    });

    it('learn nothing from a vector ranking shorter than the first half', () => {
      const rows = new EarlyRows();
      for (let s = 0; s < 50; s++) rows.learn(hits.slice(0, 5), answer(0), 10);
      expect(rows.count(10)).toBe(10);
    });
  });
});
