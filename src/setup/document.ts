import Joi from 'joi';
import { LineCounter, parseDocument, isMap, isSeq, isScalar, type Node } from 'yaml';
import { ruleSchema } from '../mandates/schemas.js';
import type { IntegrationKind } from '../integrations/kinds.js';
import { integrationUrl, slackTeamId, ssfTrust } from '../integrations/schemas.js';

/**
 * The workspace file of `svc apply` and `svc export` (docs/setup-as-code.md): templates,
 * blueprints, agents, budgets, MCP servers and integrations, named by what people call them
 * (names and e-mail addresses) rather than by ids, so that one file fits any workspace.
 *
 * Rules:
 * - The file is YAML (JSON is YAML too); `version: 1` is the only version.
 * - A secret is never in the file: every secret field takes `{ fromEnv: NAME }`, the name of an
 *   environment variable of whoever runs `svc apply`. A string there is refused with
 *   `secret_in_file` naming the field; so is a value anywhere that has the form of a secret this
 *   service or a provider issues (`ims_`, `ask_`, `whs_`, `whsec_`, `sk_live_`, `ghp_`, ...).
 * - Names are unique within their section; what a blueprint, agent or budget refers to must be
 *   in the file or already in the workspace (the server checks the latter).
 * - Every problem is reported at once, each with its path (`agents[2].blueprint`) and the line
 *   of the file it is on.
 */

export const DOCUMENT_VERSION = 1;

/** A secret by reference: the environment variable that holds it where `svc apply` runs. */
export interface SecretRef {
  fromEnv: string;
}

export type FileRule = Record<string, unknown> & { actions: string[] };

export interface FileTemplate {
  name: string;
  rules: FileRule[];
}
export interface FileBlueprint {
  name: string;
  tags: string[];
  templates: string[];
}
export interface FileAgent {
  name: string;
  blueprint?: string | null;
  templates?: string[];
  actsFor?: string | null;
  tags?: string[];
  /** false: apply leaves the agent's mandate as people set it (the default: its templates' rules). */
  manageMandate?: boolean;
}
export interface FileBudget {
  scope: { kind: 'workspace' } | { kind: 'agent'; agent: string } | { kind: 'team' | 'principal' | 'key'; id: string };
  amountMicros: number;
  period: 'day' | 'week' | 'month';
  ladder?: Array<{ at: number; step: string }>;
}
export interface FileMcpServer {
  name: string;
  url: string;
  secret?: SecretRef | null;
  allowTools?: string[] | null;
  unprefixed?: boolean;
}
/** Each integration kind's settings in the file: one entry per kind of kinds.ts (a kind missing here fails the type check). */
interface FileIntegrationSettings {
  issuer: Record<string, never>;
  acp: Record<string, never>;
  'chat-relay': { url?: string };
  github: { apiUrl?: string; token?: SecretRef | null };
  stripe: { signingSecret: SecretRef };
  slack: { signingSecret: SecretRef; teamId?: string | null };
  ssf: { issuer: string; audience: string; jwksUri?: string; jwks?: { keys: Array<Record<string, unknown>> } };
}
export type FileIntegrations = { [K in IntegrationKind]?: FileIntegrationSettings[K] };

export interface WorkspaceDocument {
  version: 1;
  templates: FileTemplate[];
  blueprints: FileBlueprint[];
  agents: FileAgent[];
  budgets: FileBudget[];
  mcpServers: FileMcpServer[];
  integrations: FileIntegrations;
}

export const SECTIONS = ['templates', 'blueprints', 'agents', 'budgets', 'mcpServers', 'integrations'] as const;
export type Section = (typeof SECTIONS)[number];

/** One problem of a file: its path (`agents[2].name`), its line (1-based; null when not known), what is wrong. */
export interface FileProblem {
  field: string;
  line: number | null;
  message: string;
}

/** Why a file was refused: `invalid_workspace_file` (its shape), `secret_in_file`, or `secret_unset`. */
export type DocumentErrorType = 'invalid_workspace_file' | 'secret_in_file' | 'secret_unset';
export class DocumentError extends Error {
  readonly type: DocumentErrorType;
  readonly errors: FileProblem[];
  constructor(type: DocumentErrorType, errors: FileProblem[]) {
    super(errors.map((e) => `${e.field}${e.line === null ? '' : ` (line ${e.line})`}: ${e.message}`).join('; '));
    this.name = 'DocumentError';
    this.type = type;
    this.errors = errors;
  }
}

/** The secret fields of the file, as paths with `*` for a list's items. */
export const SECRET_FIELDS = [
  'mcpServers.*.secret',
  'integrations.stripe.signingSecret',
  'integrations.slack.signingSecret',
  'integrations.github.token',
] as const;

/**
 * Values that have the form of a secret: this service's (service tokens, keys, webhook secrets,
 * OAuth client secrets) and the providers' whose secrets the file's integrations hold.
 */
const SECRET_FORMS =
  /^(ims|ask|aat|art|mcs|whs)_[A-Za-z0-9_-]{20,}$|^(whsec_|sk_live_|sk_test_|rk_live_|xox[abp]-|ghp_|github_pat_|ghs_)\S{8,}$/;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const secretRef = Joi.object({
  fromEnv: Joi.string().pattern(ENV_NAME).max(128).required().messages({
    'string.pattern.base': '{{#label}} must be the name of an environment variable, such as STRIPE_SECRET',
  }),
}).messages({
  'object.base':
    '{{#label}} must be a mapping "fromEnv: NAME" naming an environment variable: a secret is never written in the file',
});

const name = Joi.string().trim().min(1).max(200);
const person = Joi.alternatives(
  Joi.string().pattern(/^usr_[0-9A-Za-z]{22}$/),
  Joi.string().trim().email({ tlds: false, minDomainSegments: 1 }).max(320),
).messages({ 'alternatives.match': '{{#label}} must be an e-mail address of a person of the workspace' });
const tags = Joi.array()
  .items(
    Joi.string()
      .trim()
      .min(1)
      .max(64)
      .pattern(/^[^\s]+$/),
  )
  .max(50)
  .unique();
const refs = Joi.array().items(name).max(50).unique();

// A template's rule: the mandate rule of the API, with approvers named by e-mail (or person id).
const fileRule = ruleSchema.keys({
  id: Joi.any().strip(),
  approval: Joi.object({
    above: Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER).required(),
    approvers: Joi.array().items(person).min(1).max(50).unique(),
    count: Joi.number().valid(1, 2).default(1),
    separationOfDuties: Joi.boolean().default(false),
  }),
});

/** Same `key` in two entries; an entry that is not a mapping is refused by its own schema instead. */
const isMapping = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);
const uniqueBy = (key: string) => (a: unknown, b: unknown) =>
  isMapping(a) && isMapping(b) && a[key] !== undefined && a[key] === b[key];

const budget = Joi.object({
  scope: Joi.alternatives()
    .conditional('.kind', {
      switch: [
        { is: 'workspace', then: Joi.object({ kind: Joi.string().valid('workspace').required() }) },
        { is: 'agent', then: Joi.object({ kind: Joi.string().valid('agent').required(), agent: name.required() }) },
      ],
      otherwise: Joi.object({
        kind: Joi.string().valid('team', 'principal', 'key').required(),
        id: Joi.string().trim().min(1).max(200).required(),
      }),
    })
    .required(),
  amountMicros: Joi.number().strict().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
  period: Joi.string().valid('day', 'week', 'month').required(),
  ladder: Joi.array()
    .items(
      Joi.object({
        at: Joi.number().strict().greater(0).max(1).required(),
        step: Joi.string().valid('nudge', 'downgrade', 'approval', 'block').required(),
      }),
    )
    .min(1)
    .max(4),
});

const url = integrationUrl;

/** Each kind's settings as the file gives them: one entry per kind of kinds.ts (a kind missing here fails the type check). */
const INTEGRATION_SETTINGS: Record<IntegrationKind, Joi.Schema> = {
  // `issuer:` with nothing after it is the same as `issuer: {}`.
  issuer: Joi.object({}).allow(null),
  acp: Joi.object({}).allow(null),
  'chat-relay': Joi.object({ url }).allow(null),
  github: Joi.object({ apiUrl: url, token: secretRef.allow(null) }),
  stripe: Joi.object({ signingSecret: secretRef.required() }),
  slack: Joi.object({
    signingSecret: secretRef.required(),
    teamId: slackTeamId,
  }),
  ssf: Joi.object(ssfTrust).xor('jwksUri', 'jwks'),
};

export const documentSchema = Joi.object<WorkspaceDocument>({
  version: Joi.number().valid(DOCUMENT_VERSION).required(),
  templates: Joi.array()
    .items(Joi.object({ name: name.required(), rules: Joi.array().items(fileRule).max(200).required() }))
    .max(1000)
    .unique(uniqueBy('name'))
    .default([]),
  blueprints: Joi.array()
    .items(Joi.object({ name: name.required(), tags: tags.default([]), templates: refs.default([]) }))
    .max(1000)
    .unique(uniqueBy('name'))
    .default([]),
  agents: Joi.array()
    .items(
      Joi.object({
        name: name.required(),
        blueprint: name.allow(null),
        templates: refs,
        actsFor: person.allow(null),
        tags,
        manageMandate: Joi.boolean(),
      }),
    )
    .max(10_000)
    .unique(uniqueBy('name'))
    .default([]),
  budgets: Joi.array()
    .items(budget)
    .max(1000)
    .unique(
      (a: unknown, b: unknown) =>
        isMapping(a) &&
        isMapping(b) &&
        isMapping(a.scope) &&
        isMapping(b.scope) &&
        budgetKey(a as never) === budgetKey(b as never),
    )
    .messages({ 'array.unique': '{{#label}} sets a second budget for the same scope and period' })
    .default([]),
  mcpServers: Joi.array()
    .items(
      Joi.object({
        name: Joi.string()
          .pattern(/^[A-Za-z0-9_-]{1,64}$/)
          .required()
          .messages({ 'string.pattern.base': '{{#label}} must be 1 to 64 letters, digits, _ or -' }),
        url: url.required(),
        secret: secretRef.allow(null),
        allowTools: Joi.array().items(Joi.string().max(128)).max(500).unique().allow(null),
        unprefixed: Joi.boolean(),
      }),
    )
    .max(200)
    .unique(uniqueBy('name'))
    .default([]),
  integrations: Joi.object(INTEGRATION_SETTINGS)
    .custom((value: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(value).map(([kind, settings]) => [kind, settings ?? {}])),
    )
    .default({}),
});

/** What identifies a budget in the file and in the workspace: its scope and period. */
export function budgetKey(b: Pick<FileBudget, 'scope' | 'period'>): string {
  const s = b.scope as { kind: string; agent?: string; id?: string };
  return `${s.kind}:${s.agent ?? s.id ?? ''}:${b.period}`;
}

const pathText = (path: ReadonlyArray<string | number>): string =>
  path.reduce<string>((out, p) => (typeof p === 'number' ? `${out}[${p}]` : out ? `${out}.${p}` : p), '') || '(file)';

/** The secret fields a document names: each path, and the variable it refers to. */
export function secretRefs(doc: WorkspaceDocument): Array<{ field: string; fromEnv: string }> {
  const out: Array<{ field: string; fromEnv: string }> = [];
  doc.mcpServers.forEach((s, i) => {
    if (s.secret) out.push({ field: `mcpServers[${i}].secret`, fromEnv: s.secret.fromEnv });
  });
  const { stripe, slack, github } = doc.integrations;
  if (stripe) out.push({ field: 'integrations.stripe.signingSecret', fromEnv: stripe.signingSecret.fromEnv });
  if (slack) out.push({ field: 'integrations.slack.signingSecret', fromEnv: slack.signingSecret.fromEnv });
  if (github?.token) out.push({ field: 'integrations.github.token', fromEnv: github.token.fromEnv });
  return out;
}

const isSecretField = (path: ReadonlyArray<string | number>): boolean =>
  SECRET_FIELDS.some((pattern) => {
    const parts = pattern.split('.');
    return (
      parts.length === path.length && parts.every((p, i) => (p === '*' ? typeof path[i] === 'number' : p === path[i]))
    );
  });

/** Literal secrets: a string in a secret field, or a value anywhere with a secret's form. */
function literalSecrets(value: unknown, path: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value === 'string' || typeof value === 'number') {
    if (isSecretField(path)) return [path];
    return typeof value === 'string' && SECRET_FORMS.test(value.trim()) ? [path] : [];
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => literalSecrets(v, [...path, i]));
  if (value && typeof value === 'object')
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => literalSecrets(v, [...path, k]));
  return [];
}

/**
 * Checks a document already parsed (JSON from a request, or YAML's value): refuses literal
 * secrets first, then checks its shape; answers it with defaults filled in. `lineOf` maps a path
 * to its line in the file, where there is one.
 *
 * @example
 * const doc = checkDocument({ version: 1, templates: [{ name: 'small', rules: [{ actions: ['payment'] }] }] });
 */
export function checkDocument(
  value: unknown,
  lineOf: (path: ReadonlyArray<string | number>) => number | null = () => null,
): WorkspaceDocument {
  const secrets = literalSecrets(value);
  if (secrets.length > 0) {
    throw new DocumentError(
      'secret_in_file',
      secrets.map((path) => ({
        field: pathText(path),
        line: lineOf(path),
        message: `${pathText(path)} holds a secret written in the file: write { fromEnv: NAME } and set NAME in the environment instead`,
      })),
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new DocumentError('invalid_workspace_file', [
      { field: '(file)', line: 1, message: 'the file must be a mapping with version: 1 and the sections to set' },
    ]);
  }
  const { error, value: checked } = documentSchema.validate(value, { abortEarly: false, convert: true });
  if (error) {
    throw new DocumentError(
      'invalid_workspace_file',
      error.details.map((d) => ({
        field: pathText(d.path),
        line: lineOf(d.path),
        message: d.context?.label ? d.message.replaceAll(`"${d.context.label}"`, d.context.label) : d.message,
      })),
    );
  }
  return checked;
}

/** The line (1-based) of the node at `path`, or of its nearest parent the file has. */
function lineFinder(doc: ReturnType<typeof parseDocument>, counter: LineCounter) {
  return (path: ReadonlyArray<string | number>): number | null => {
    for (let n = path.length; n >= 0; n -= 1) {
      const node = doc.getIn(path.slice(0, n), true) as Node | undefined;
      if (node && (isMap(node) || isSeq(node) || isScalar(node)) && node.range)
        return counter.linePos(node.range[0]).line;
    }
    return null;
  };
}

/**
 * Parses and checks the text of a workspace file (YAML or JSON). A YAML syntax error is
 * `invalid_workspace_file` with its line; a literal secret is `secret_in_file`.
 *
 * @example
 * const doc = parseWorkspaceFile('version: 1\ntemplates: []\n');
 */
export function parseWorkspaceFile(text: string): WorkspaceDocument {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new DocumentError(
      'invalid_workspace_file',
      doc.errors.map((e) => ({
        field: '(file)',
        line: e.linePos?.[0]?.line ?? counter.linePos(e.pos[0]).line,
        message: `not valid YAML: ${e.message.split('\n')[0]}`,
      })),
    );
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new DocumentError('invalid_workspace_file', [
      { field: '(file)', line: null, message: `not valid YAML: ${(err as Error).message}` },
    ]);
  }
  return checkDocument(value, lineFinder(doc, counter));
}

/** A path as problems name it (`agents[2].blueprint`) split into its keys and indexes. */
export function pathOf(field: string): Array<string | number> {
  const out: Array<string | number> = [];
  for (const m of field.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : m[1]!);
  return out;
}

/**
 * The line of each path in a workspace file's text (a problem the server found names its path
 * only): the line of the node at the path, or of its nearest parent in the file; null for a text
 * that does not parse.
 *
 * @example
 * lineOfField('version: 1\nagents:\n  - name: a\n')('agents[0].name'); // 3
 */
export function lineOfField(text: string): (field: string) => number | null {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false });
  if (doc.errors.length > 0) return () => null;
  const find = lineFinder(doc, counter);
  return (field) => find(pathOf(field));
}
