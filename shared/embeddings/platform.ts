// The registry's contents live apart from its types, so a consumer can implement the types without a cycle.
import { documentIndexConsumer } from '../document-index/consumer.js';
import { EmbeddingConsumerRegistry } from './consumers.js';

/** The platform's consumers (listed here as routes are listed in api/routes/index.ts). */
export function platformEmbeddingConsumers(): EmbeddingConsumerRegistry {
  return new EmbeddingConsumerRegistry([documentIndexConsumer]);
}
