import type { Approvals } from '../approvals/service.js';
import type { IntegrationRegistry } from '../integrations/registry.js';
import type { Once } from '../integrations/once.js';
import type { Ledger } from '../ledger/service.js';
import type { Clock } from '../lib/clock.js';
import type { PeopleService } from '../people/index.js';
import type { Store } from '../store/index.js';
import type { Webhooks } from '../webhooks/service.js';
import type { ChatRepo } from './repo.js';

export interface ChatDeps {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  webhooks: Webhooks;
  registry: IntegrationRegistry;
  approvals: Approvals;
  people: PeopleService;
  once: Once;
  /** Derives each button's token from its salt (HMAC-SHA-256). */
  buttonKey: Buffer;
  publicUrl: () => string;
}

/** What the chat relay's operations share (service.ts builds it once; each operation file takes it). */
export interface ChatContext extends ChatDeps {
  repo: ChatRepo;
  /** A button's token from its salt: the same on every try, never stored. */
  tokenOf(salt: string): string;
  /** What the store keeps of a token (`chatButtons` key). */
  hashOf(token: string): string;
  /** The workspace's chat relay address, when it set one. */
  relayUrl(wid: string): Promise<string | undefined>;
}
