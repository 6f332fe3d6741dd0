import type { Permission } from '../people/permissions.js';
import type { IntegrationKind } from './records.js';

/** Who sets a kind up: owners and admins, except where the secret speaks for people (owners only). */
export const KIND_PERMISSION: Partial<Record<IntegrationKind, Permission>> = {
  ssf: 'integrations.identityProvider',
  slack: 'integrations.approvalChannels',
  'chat-relay': 'integrations.approvalChannels',
};
