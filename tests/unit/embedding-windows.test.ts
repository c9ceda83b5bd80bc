import { describe, expect, it } from 'vitest';
import { embeddingWindowWarning } from '../../shared/llm/embedding-windows.js';

describe('embedding input windows (spec Limits)', () => {
  it('warns past 512 characters for the warehouse-AI provider and 8000 for proxy-routed ones', () => {
    expect(embeddingWindowWarning('warehouse_ai', ['x'.repeat(512)])).toBeNull();
    expect(embeddingWindowWarning('warehouse_ai', ['x'.repeat(513), 'short'])).toMatchObject({
      threshold: 512,
      over: 1,
      longest: 513,
    });
    expect(embeddingWindowWarning('proxy', ['y'.repeat(8000)])).toBeNull();
    const w = embeddingWindowWarning('proxy', ['y'.repeat(8001), 'z'.repeat(9000)]);
    expect(w).toMatchObject({ threshold: 8000, over: 2, longest: 9000 });
    expect(w!.message).toMatch(/full text is kept/);
  });

  it('has no window for other kinds', () => {
    expect(embeddingWindowWarning('openai', ['x'.repeat(100_000)])).toBeNull();
  });
});
