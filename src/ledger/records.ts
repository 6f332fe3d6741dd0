/** What a caller appends to a workspace's ledger (docs/gate.md#ledger). */
export interface LedgerEvent {
  workspaceId: string;
  /** agent:agt_…, user:usr_…, token:<name>, key:key_…, operator:cli, system */
  actor: string;
  tokenId?: string;
  kind: string;
  subject: string;
  data: Record<string, unknown>;
}

/**
 * An event as a decision appends it: its id and its time, durable and hashed at once, waiting to
 * be integrated (it has no index yet).
 */
export interface AppendedRecord extends LedgerEvent {
  id: string;
  at: string;
}

/** An integrated record: an appended one with its place in the workspace's ledger. */
export interface LedgerRecord extends AppendedRecord {
  index: number;
}

/**
 * The head of a workspace's ledger: its size, and the compact range of its Merkle tree as of the
 * last checkpoint (the next checkpoint extends it with the leaf hashes stored since), so that an
 * append writes a small head.
 */
export interface LedgerHead {
  size: number;
  checkpointSize: number;
  checkpointFrontier: string[];
  /** The checkpoint origin line, fixed when the ledger starts: <host>/<wid>. */
  origin: string;
}

/** A ledger record exactly as hashed: the RFC 8785 bytes and their RFC 9162 leaf hash. */
export interface LedgerEntry {
  bytes: string;
  leaf: string;
}

export interface CheckpointRecord {
  size: number;
  /** The C2SP signed note. */
  note: string;
  at: string;
  /** The ledger key that signed it. */
  kid: string;
}

/** The witnesses' cosignatures of one signed checkpoint (C2SP tlog-cosignature), one per witness. */
export interface CosignaturesRecord {
  size: number;
  lines: Array<{
    /** The witness's key name. */
    witness: string;
    /** The signature line as the witness gave it (`— <name> <base64>`), without its newline. */
    line: string;
    /** The cosignature's own time (POSIX seconds). */
    timestamp: number;
    /** When svc stored it. */
    at: string;
  }>;
}

/**
 * A record waiting to be integrated: the RFC 8785 bytes of the appended record (no index) and
 * their RFC 9162 leaf hash. Its key, [wid, appendedAtMs, seq, id], orders the waiting entries.
 */
export type WaitingEntry = LedgerEntry;

/** Who integrates the ledgers: the holder of this lease until `expiresAt` (ms), renewed while it lives. */
export interface LedgerLease {
  holder: string;
  expiresAt: number;
  /** When this holder took it (ms). */
  since: number;
}
