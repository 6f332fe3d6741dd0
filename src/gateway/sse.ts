/**
 * Server-sent events, read incrementally from an upstream body (RFC 8895 as vendors use it):
 * events end at a blank line; `event:` names one, `data:` lines (joined by \n) carry it; lines
 * may end in \n or \r\n; a comment line starts with `:`. Chunks may split anywhere, even inside
 * a line, so the reader keeps the unfinished tail until the next chunk.
 */
export interface SseEvent {
  event: string | null;
  data: string;
  /** The event's bytes exactly as received (with its blank line), for pass-through. */
  raw: string;
}

export class SseReader {
  /** The unfinished event's text, as it came (joined only once the event is complete). */
  private parts: string[] = [];
  /** Its last two characters: a blank line may begin there and end in the next chunk. */
  private edge = '';

  /**
   * The events completed by this chunk, in order. Linear in what is pushed: a chunk is searched
   * for a blank line with only the two characters before it, so an event that arrives in many
   * chunks is not searched again from its start each time (a 10 MB event in 64 KB chunks took
   * 2.3 s).
   */
  push(chunk: string): SseEvent[] {
    const around = this.edge + chunk;
    if (blankLine(around, 0) === null) {
      if (chunk !== '') this.parts.push(chunk);
      this.edge = around.slice(-2);
      return [];
    }
    const text = this.parts.join('') + chunk;
    const out: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const end = blankLine(text, start);
      if (end === null) break;
      const raw = text.slice(start, end.after);
      const event = parseBlock(text.slice(start, end.at));
      if (event) out.push({ ...event, raw });
      start = end.after;
    }
    const rest = text.slice(start);
    this.parts = rest === '' ? [] : [rest];
    this.edge = rest.slice(-2);
    return out;
  }

  /** Whatever was left without its closing blank line (a stream cut midway), or ''. */
  rest(): string {
    return this.parts.join('');
  }
}

/** The next blank line at or after `from`: where the block ends, and where the next begins. */
function blankLine(text: string, from: number): { at: number; after: number } | null {
  for (let i = text.indexOf('\n', from); i !== -1; i = text.indexOf('\n', i + 1)) {
    const next = text.charCodeAt(i + 1);
    if (next === 10) return { at: i, after: i + 2 };
    if (next === 13 && text.charCodeAt(i + 2) === 10) return { at: i, after: i + 3 };
  }
  return null;
}

function parseBlock(block: string): { event: string | null; data: string } | null {
  let event: string | null = null;
  const data: string[] = [];
  for (const rawLine of block.split('\n')) {
    const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (event === null && data.length === 0) return null;
  return { event, data: data.join('\n') };
}

export const sseData = (json: unknown): string => `data: ${JSON.stringify(json)}\n\n`;
export const sseEvent = (name: string, json: unknown): string => `event: ${name}\ndata: ${JSON.stringify(json)}\n\n`;
