/**
 * What another party wrote (an upstream's tool names and answers, a downloaded server.json),
 * made safe for a terminal: control characters (escape sequences that could rewrite the screen,
 * new lines that could forge a line of output, and the bidirectional controls that could show it
 * reordered) are shown as \uXXXX. The answers under --json
 * keep the text as it came, JSON-escaped.
 */
// eslint-disable-next-line no-control-regex -- the control characters are what is replaced
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
export const printable = (text: string): string =>
  text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
