import { ago } from './text.js';
/**
 * The page script's helpers: elements built with text nodes only, the one API call (JSON, the
 * CSRF header on writes, error.message on failure), notices, and formatting of money and
 * time. Money is written as the server writes it (lib/money.ts): "EUR 20.00", with ISO 4217's decimals.
 */
export const body = document.body;

/**
 * What the API answers, as read by the page: its shapes are the API's (docs/api.md), and each
 * field the page shows is read where it is shown.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the API, read field by field
export type Data = any;

/** An error answer of the API: its message for the person, its type and HTTP status (0: no answer). */
export class ApiError extends Error {
  type: string | undefined;
  status: number;
  constructor(message: string, type: string | undefined, status: number) {
    super(message);
    this.type = type;
    this.status = status;
  }
}

/** What a catch received, as an ApiError (another error keeps its message). */
export function failureOf(caught: unknown): ApiError {
  if (caught instanceof ApiError) return caught;
  return new ApiError(caught instanceof Error ? caught.message : String(caught), undefined, 0);
}

// ---- small DOM and HTTP helpers ----------------------------------------------------------

/** An element the page has (an Error naming it when it has not). */
export function $<T extends HTMLElement = HTMLElement>(selector: string, root?: ParentNode): T {
  const node = (root ?? document).querySelector<T>(selector);
  if (!node) throw new Error('The page has no ' + selector + '.');
  return node;
}

/** An element the page may have (only on some pages, or for some roles). */
export function find<T extends HTMLElement = HTMLElement>(selector: string, root?: ParentNode): T | null {
  return (root ?? document).querySelector<T>(selector);
}

/** What el() and append() take as children: nodes, text, nothing, or lists of them. */
export type Child = Node | string | null | undefined | false | Child[];
/** el()'s properties: class, text, on<event> handlers, data (data-*), value, other attributes. */
export type Props = Record<string, unknown>;

/** An element with properties, attributes and children; strings become text nodes. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: Props,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  const p = props || {};
  Object.keys(p).forEach(function (key) {
    const value = p[key];
    if (value === undefined || value === null || value === false) return;
    if (key === 'class') node.className = String(value);
    else if (key === 'text') node.textContent = String(value);
    else if (key.slice(0, 2) === 'on') node.addEventListener(key.slice(2), value as EventListener);
    else if (key === 'data') {
      const data = value as Record<string, unknown>;
      Object.keys(data).forEach(function (k) {
        node.dataset[k] = String(data[k]);
      });
    } else if (key === 'value') (node as HTMLInputElement).value = String(value);
    else node.setAttribute(key, value === true ? '' : String(value));
  });
  for (const child of children) append(node, child);
  return node;
}

export function append(node: Element, child: Child): void {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    child.forEach(function (c) {
      append(node, c);
    });
    return;
  }
  node.append(typeof child === 'string' ? document.createTextNode(child) : child);
}

export function replace(node: Element, ...children: Child[]): void {
  node.replaceChildren();
  for (const child of children) append(node, child);
}

/** One API call: JSON in and out; writes carry the CSRF header. Rejects with error.message. */
export async function api(method: string, path: string, payload?: unknown): Promise<Data> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const init: RequestInit = { method: method, headers: headers, credentials: 'same-origin', cache: 'no-store' };
  if (method !== 'GET') headers['x-svc-csrf'] = '1';
  if (method !== 'GET') {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(payload === undefined ? {} : payload);
  }
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch {
    throw failure('The server could not be reached. Check the connection and try again.', 'network', 0);
  }
  let data: Data;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok) {
    const e = data && data.error;
    throw failure(
      e && typeof e.message === 'string' ? e.message : 'The server answered ' + res.status + '.',
      e && e.type,
      res.status,
    );
  }
  return data;
}

export function failure(message: string, type: string | undefined, status: number): ApiError {
  return new ApiError(message, type, status);
}

export function showNotice(node: HTMLElement | null, message: string, kind?: 'info' | 'error'): void {
  if (!node) return;
  node.textContent = message || '';
  node.hidden = !message;
  node.className = 'notice' + (kind === 'info' ? '' : ' notice-error');
}

/** Something a person can press or fill in, made busy while its request runs. */
export type Control = { disabled: boolean };

/**
 * An event handler that runs async work: the listener starts it and returns (the work shows its
 * own errors to the person).
 */
export function later<E extends Event>(work: (event: E) => Promise<unknown>): (event: E) => void {
  return function (event) {
    void work(event);
  };
}

export function setBusy(buttons: Array<Control | null | undefined>, busy: boolean): void {
  buttons.forEach(function (b) {
    if (b) b.disabled = busy;
  });
}

export function time(iso: string): HTMLTimeElement {
  return el('time', { datetime: iso, title: iso, text: ago(iso) });
}
