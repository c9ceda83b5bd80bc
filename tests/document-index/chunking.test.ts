import { describe, expect, it } from 'vitest';
import { chunkText, resolveChunkConfig, sentencesOf, type ChunkConfig } from '../../shared/document-index/chunking.js';
import { collectionOf, cosine } from '../../shared/document-index/embedder.js';
import { LOCAL_EMBEDDING_DIMENSIONS, localEmbed, stem, tokens } from '../../shared/document-index/local-embedding.js';

const sentence = (size: number, overlap: number): ChunkConfig => ({
  chunk_size: size,
  chunk_overlap: overlap,
  chunk_strategy: 'sentence',
});
const S1 = 'One two three.';
const S2 = 'Four five six.';
const S3 = 'Seven eight nine.';
const TEXT = `${S1} ${S2} ${S3}`;

describe('sentence splitter', () => {
  it('keeps sentences whole and packs them up to chunk_size tokens (4 characters each)', () => {
    // 5 tokens = 20 characters: no two sentences fit together.
    expect(chunkText(TEXT, sentence(5, 0))).toEqual([S1, S2, S3]);
    // 10 tokens = 40 characters: two sentences (29) fit, three (47) do not.
    expect(chunkText(TEXT, sentence(10, 0))).toEqual([`${S1} ${S2}`, S3]);
  });

  it('carries whole trailing sentences that fit in chunk_overlap into the next chunk', () => {
    // Overlap 4 tokens = 16 characters: S2 (14) is carried, S1 + S2 (29) is not.
    expect(chunkText(TEXT, sentence(10, 4))).toEqual([`${S1} ${S2}`, `${S2} ${S3}`]);
    // Overlap 3 tokens = 12 characters: no sentence fits, nothing is carried.
    expect(chunkText(TEXT, sentence(10, 3))).toEqual([`${S1} ${S2}`, S3]);
  });

  it('cuts a sentence longer than a chunk at word boundaries, and a longer word at characters', () => {
    const long = Array.from({ length: 12 }, (_, i) => `word${i}`).join(' ') + '.';
    const chunks = chunkText(long, sentence(5, 0));
    expect(chunks.every((c) => c.length <= 20)).toBe(true);
    expect(chunks.join(' ')).toBe(long);
    expect(chunks[0]).toBe('word0 word1 word2');
    const word = 'x'.repeat(45);
    expect(chunkText(word, sentence(5, 0))).toEqual(['x'.repeat(20), 'x'.repeat(20), 'x'.repeat(5)]);
  });

  it('splits non-ASCII text, full-width sentence ends included', () => {
    expect(sentencesOf('Grüße aus München! Ça va? 東京は大きい。大阪も大きい。')).toEqual([
      'Grüße aus München!',
      'Ça va?',
      '東京は大きい。',
      '大阪も大きい。',
    ]);
    expect(chunkText('東京は大きい。大阪も大きい。', sentence(2, 0))).toEqual(['東京は大きい。', '大阪も大きい。']);
  });

  it('gives an empty or blank document no chunks, and one_chunk_per_doc the whole text', () => {
    expect(chunkText('', sentence(5, 0))).toEqual([]);
    expect(chunkText(' \n\n ', NO)).toEqual([]);
    expect(chunkText(TEXT, { chunk_size: 1, chunk_overlap: 0, chunk_strategy: 'one_chunk_per_doc' })).toEqual([TEXT]);
  });

  it('without any chunk parameter packs paragraphs up to 1024 tokens with no overlap (prior behaviour)', () => {
    expect(chunkText(`${S1}\n\n${S2}`, NO)).toEqual([`${S1} ${S2}`]);
    const para = 'a'.repeat(3000);
    expect(chunkText(`${para}\n\n${para}`, NO)).toEqual([para, para]);
  });
});

const NO: ChunkConfig = { chunk_size: null, chunk_overlap: null, chunk_strategy: null };

describe('chunk configuration', () => {
  it('resolves per-call values over index defaults, sentence defaults when any is given, null when none', () => {
    expect(resolveChunkConfig(null, {})).toEqual({ config: NO });
    expect(resolveChunkConfig(null, { chunk_overlap: 10 })).toEqual({
      config: { chunk_size: 1024, chunk_overlap: 10, chunk_strategy: 'sentence' },
    });
    expect(resolveChunkConfig(sentence(300, 50), {})).toEqual({ config: sentence(300, 50) });
    expect(resolveChunkConfig(sentence(300, 50), { chunk_size: 100 })).toEqual({ config: sentence(100, 50) });
  });

  it('refuses an overlap that is not less than the size', () => {
    expect(resolveChunkConfig(null, { chunk_size: 100, chunk_overlap: 100 })).toEqual({
      error: 'chunk_overlap (100) must be less than chunk_size (100).',
    });
    expect(resolveChunkConfig(sentence(300, 50), { chunk_size: 40 })).toHaveProperty('error');
    expect(resolveChunkConfig(null, { chunk_overlap: 2000 })).toHaveProperty('error');
  });
});

describe('local hashing embeddings', () => {
  it('is deterministic, normalised, and folds word forms by stemming', () => {
    const a = localEmbed('Indexing documents');
    expect(a).toHaveLength(LOCAL_EMBEDDING_DIMENSIONS);
    expect(a).toEqual(localEmbed('Indexing documents'));
    expect(cosine(a, a)).toBeCloseTo(1, 6);
    expect(tokens('Indexing the documents')).toEqual(tokens('index document'));
    expect(tokens('The documents')).toHaveLength(1);
    expect(stem('rotations')).toBe(stem('rotation'));
    expect(cosine(a, localEmbed('index the document'))).toBeCloseTo(1, 6);
    expect(cosine(a, localEmbed('holiday allowance'))).toBeLessThan(0.3);
  });

  it('gives the vectors of its definition bit for bit (stored vectors stay valid), ASCII and Unicode text alike', () => {
    // The definition, written plainly: a map of feature strings in first-occurrence order, FNV-1a of each.
    const fnv = (s: string) => {
      let h = 0x811c9dc5;
      for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
      return h >>> 0;
    };
    const reference = (text: string) => {
      const tf = new Map<string, number>();
      const toks = tokens(text);
      toks.forEach((t, i) => {
        tf.set(t, (tf.get(t) ?? 0) + 1);
        if (i > 0) tf.set(`${toks[i - 1]}_${t}`, (tf.get(`${toks[i - 1]}_${t}`) ?? 0) + 0.5);
      });
      const v = new Array<number>(LOCAL_EMBEDDING_DIMENSIONS).fill(0);
      for (const [f, n] of tf)
        v[fnv(f) % LOCAL_EMBEDDING_DIMENSIONS]! += (fnv(f) & 0x80000000 ? -1 : 1) * (1 + Math.log(n));
      const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
      return norm > 0 ? v.map((x) => x / norm) : v;
    };
    const words = ['Indexing', 'the', 'documents', 'INDEX', 'runs', 'running', 'Straße', 'ÉCOLE', 'İstanbul', '日本語'];
    const words2 = ['ponies', 'caresses', 'happiness', 'x2', '42', 'e-mail', "don't", 'a_b', 'was', 'fulfilled'];
    const texts = ['', '  ...  ', 'the a an', 'Rotation rotations rotated; rotation!'];
    for (let i = 0; i < 300; i++)
      texts.push(
        Array.from({ length: 1 + (i % 40) }, (_, k) => (k % 3 ? words : words2)[(i * 7 + k * 13) % 10]).join(
          i % 2 ? ' ' : ', ',
        ),
      );
    for (const text of texts) expect(localEmbed(text), text).toEqual(reference(text));
  });

  it('names collections {provider}_{sanitized_model}_index', () => {
    expect(collectionOf({ provider_kind: 'other', sub_provider: 'acme', model_name: 'text-embedding-3.small' })).toBe(
      'other_acme_text_embedding_3_small_index',
    );
    expect(collectionOf({ provider_kind: 'local', sub_provider: '', model_name: 'hashing-384-v1' })).toBe(
      'local_hashing_384_v1_index',
    );
  });
});
