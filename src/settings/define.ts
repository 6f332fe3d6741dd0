import Joi from 'joi';

/**
 * The builder every setting is declared with, so that one declaration gives all that is known of
 * a setting: its TypeScript type (by the mapped types below), its validation and default (the joi
 * schema it builds), its environment variable (the env list load.ts reads) and its row in
 * docs/configuration.md (docs.ts).
 *
 * Rules it keeps:
 * - A setting's type follows from how it is declared: a `default`, `required` or `filled` (set by
 *   load.ts after validation) makes it always present; `nullable` adds `null`.
 * - The joi schema is built in one order (base, the kind's own rules, `joi` refinements, then
 *   null, default, required, description), so a refinement keeps the rule order that decides the
 *   order of the messages.
 * - A boolean read from the environment also takes `1` and `0`.
 */

/** What a declaration says besides its validation: where it comes from and how the docs show it. */
export interface Meta {
  /** The environment variable that sets it (flags win over it, it over config files). */
  readonly env?: string;
  /** The `svc serve` flag that also sets it, as the docs name it (e.g. `--workers`). */
  readonly flag?: string;
  /** Environment variables load.ts reads into it, for a setting no file may give. */
  readonly reads?: readonly string[];
  /** Its meaning, as the docs table's row says it (Markdown). */
  readonly doc?: string;
  /** The docs' default column, where the default is not a plain value (none, or computed). */
  readonly shown?: string;
}

/**
 * One declared setting. `T` is its value once loaded; `P` whether it is always present in its
 * object (`true`) or may be left out (`false`).
 */
export interface Setting<T, P extends boolean = boolean> {
  readonly schema: Joi.Schema;
  readonly meta: Meta;
  /** An object's members, by key. */
  readonly fields?: Readonly<Record<string, AnySetting>>;
  /** A list's item. */
  readonly item?: AnySetting;
  readonly present: P;
  /** Never set at run time: it carries the value's type for the mapped types. */
  readonly __value?: T;
}

/** Any declared setting. */
export type AnySetting = Setting<unknown, boolean>;

/** The loaded value of a declared setting. */
export type ValueOf<S> = S extends Setting<infer T, boolean> ? T : never;

type Flat<T> = { [K in keyof T]: T[K] } & {};
type PresentKeys<F> = { [K in keyof F]: F[K] extends Setting<unknown, true> ? K : never }[keyof F];

/** The loaded shape of an object's members: present members required, the others optional. */
export type ShapeOf<F extends Readonly<Record<string, AnySetting>>> = Flat<
  { -readonly [K in PresentKeys<F>]: ValueOf<F[K]> } & {
    -readonly [K in Exclude<keyof F, PresentKeys<F>>]?: ValueOf<F[K]>;
  }
>;

interface Common<T> extends Meta {
  /** The value when none is given (a list's or an object's is copied for every load by joi). */
  readonly default?: T | null;
  readonly required?: true;
  readonly nullable?: true;
  /** Absent from the input but always set once loaded (load.ts fills it). */
  readonly filled?: true;
  /**
   * The type leaves it optional though the default always sets it, so code that builds one by hand
   * (a test's provider) may leave it out.
   */
  readonly typeOptional?: true;
}

type Present<O> = O extends { typeOptional: true }
  ? false
  : O extends { default: unknown } | { required: true } | { filled: true }
    ? true
    : false;
type Out<T, O> = Setting<O extends { nullable: true } ? T | null : T, Present<O>>;

export interface NumberOptions extends Common<number> {
  readonly min?: number;
  readonly max?: number;
}

export interface StringOptions<V extends string = string> extends Common<V> {
  readonly min?: number;
  readonly max?: number;
  /** Further rules, after min and max (patterns, formats, messages). */
  readonly joi?: (schema: Joi.StringSchema) => Joi.StringSchema;
}

export interface ListOptions<T> extends Common<T[]> {
  readonly min?: number;
  readonly max?: number;
  /** Further rules, after min and max (uniqueness). */
  readonly joi?: (schema: Joi.ArraySchema) => Joi.ArraySchema;
}

export interface ObjectOptions<T> extends Common<T> {
  /** Rules between members (xor, and, oxor). */
  readonly joi?: (schema: Joi.ObjectSchema) => Joi.ObjectSchema;
}

function metaOf(options: Meta): Meta {
  const { env, flag, reads, doc, shown } = options;
  return Object.fromEntries(
    Object.entries({ env, flag, reads, doc, shown }).filter(([, value]) => value !== undefined),
  ) as Meta;
}

function finish<T, P extends boolean>(
  schema: Joi.Schema,
  options: Common<unknown>,
  parts: { fields?: Record<string, AnySetting>; item?: AnySetting } = {},
): Setting<T, P> {
  let s = schema;
  if (options.nullable) s = s.allow(null);
  if (options.default !== undefined) s = s.default(options.default);
  if (options.required) s = s.required();
  if (options.doc !== undefined) s = s.description(options.doc);
  const present = !options.typeOptional && (options.default !== undefined || !!options.required || !!options.filled);
  return { schema: s, meta: metaOf(options), ...parts, present: present as P };
}

function numberRange(schema: Joi.NumberSchema, options: NumberOptions): Joi.NumberSchema {
  let s = schema;
  if (options.min !== undefined) s = s.min(options.min);
  if (options.max !== undefined) s = s.max(options.max);
  return s;
}

/** A whole number. */
export function int<O extends NumberOptions>(options: O): Out<number, O> {
  return finish(numberRange(Joi.number().integer(), options), options);
}

/** A number, fractions allowed. */
export function number<O extends NumberOptions>(options: O): Out<number, O> {
  return finish(numberRange(Joi.number(), options), options);
}

/** Text. */
export function string<O extends StringOptions>(options: O = {} as O): Out<string, O> {
  let s = Joi.string();
  if (options.min !== undefined) s = s.min(options.min);
  if (options.max !== undefined) s = s.max(options.max);
  if (options.joi) s = options.joi(s);
  return finish(s, options);
}

/** One of a closed list of words; the list is the type. */
export function oneOf<const V extends readonly [string, ...string[]], O extends Common<V[number]>>(
  values: V,
  options: O = {} as O,
): Out<V[number], O> {
  return finish(Joi.string().valid(...values), options);
}

/** true or false (from the environment also `1` or `0`). */
export function bool<O extends Common<boolean>>(options: O): Out<boolean, O> {
  const base = Joi.boolean();
  return finish(options.env === undefined ? base : base.truthy('1').falsy('0'), options);
}

/** A list of one kind of setting (from the environment: a comma list of words). */
export function list<S extends AnySetting, O extends ListOptions<ValueOf<S>>>(
  item: S,
  options: O = {} as O,
): Out<ValueOf<S>[], O> {
  let s = Joi.array().items(item.schema);
  if (options.min !== undefined) s = s.min(options.min);
  if (options.max !== undefined) s = s.max(options.max);
  if (options.joi) s = options.joi(s);
  return finish(s, options, { item });
}

/** An object of named members, each a setting. */
export function object<F extends Record<string, AnySetting>, O extends ObjectOptions<ShapeOf<F>>>(
  fields: F,
  options: O = {} as O,
): Out<ShapeOf<F>, O> {
  let s = Joi.object(Object.fromEntries(Object.entries(fields).map(([key, field]) => [key, field.schema])));
  if (options.joi) s = options.joi(s);
  return finish(s, options, { fields });
}

/**
 * A group of settings: an object whose default is made of its members' defaults, so a config file
 * may leave it out.
 */
export function group<F extends Record<string, AnySetting>>(fields: F, meta: Meta = {}): Setting<ShapeOf<F>, true> {
  let s = Joi.object(Object.fromEntries(Object.entries(fields).map(([key, field]) => [key, field.schema]))).default();
  if (meta.doc !== undefined) s = s.description(meta.doc);
  return { schema: s, meta: metaOf(meta), fields, present: true };
}

/** A map from names (checked by `key`) to one kind of setting. */
export function record<S extends AnySetting, O extends Common<Record<string, ValueOf<S>>>>(
  key: Joi.StringSchema,
  value: S,
  options: O & { readonly joi?: (schema: Joi.ObjectSchema) => Joi.ObjectSchema },
): Out<Record<string, ValueOf<S>>, O> {
  let s = Joi.object().pattern(key, value.schema);
  if (options.joi) s = options.joi(s);
  return finish(s, options);
}

/**
 * A value load.ts sets after validation (a secret read from the environment, say), never given in
 * a file: the input is refused, with `message` when given.
 */
export function loaded<T, P extends boolean = true>(
  options: Meta & { readonly message?: string; readonly present: P },
): Setting<T, P> {
  let s = Joi.any().forbidden();
  if (options.message !== undefined) s = s.messages({ 'any.unknown': options.message });
  if (options.doc !== undefined) s = s.description(options.doc);
  return { schema: s, meta: metaOf(options), present: options.present };
}

/** The same setting with its own meaning in the docs (a shared shape used in one more place). */
export function documented<T, P extends boolean>(setting: Setting<T, P>, meta: Meta): Setting<T, P> {
  return {
    ...setting,
    schema: meta.doc === undefined ? setting.schema : setting.schema.description(meta.doc),
    meta: { ...setting.meta, ...metaOf(meta) },
  };
}

/** One setting met on a walk of the declarations, with its dotted path (`[]` marks a list's item). */
export interface Visit {
  readonly path: string;
  readonly setting: AnySetting;
  /** Inside a list's item: not a path of the settings object. */
  readonly inItem: boolean;
}

/** Every declared setting, parents before their members, in declaration order. */
export function walk(fields: Readonly<Record<string, AnySetting>>, prefix = '', inItem = false): Visit[] {
  return Object.entries(fields).flatMap(([key, setting]) => {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    const inner = setting.fields
      ? walk(setting.fields, path, inItem)
      : setting.item?.fields
        ? walk(setting.item.fields, `${path}[]`, true)
        : [];
    return [{ path, setting, inItem }, ...inner];
  });
}

/** An environment variable and the setting it sets. */
export interface EnvVariable {
  readonly name: string;
  readonly path: string;
  /** The value is a comma list. */
  readonly list: boolean;
}

/** The environment variables the declarations name, in declaration order. */
export function envVariables(fields: Readonly<Record<string, AnySetting>>): EnvVariable[] {
  return walk(fields).flatMap(({ path, setting }) =>
    setting.meta.env === undefined ? [] : [{ name: setting.meta.env, path, list: setting.item !== undefined }],
  );
}
