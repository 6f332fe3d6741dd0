import { parentPort } from 'node:worker_threads';
import { tokenizerOf, type Tokenizer } from './token-count.js';

/**
 * The tokenizer's worker thread (tokens.ts starts it): loads gpt-tokenizer, says whether it is
 * ready, then counts each text it is sent until the text's deadline, answering the count, or null
 * past the deadline (the text is then estimated). A text whose deadline passed while it waited
 * costs nothing.
 */
export interface CountJob {
  id: number;
  text: string;
  /** Date.now() milliseconds. */
  deadline: number;
}
export type WorkerMessage = { ready: true } | { ready: false; error: string } | { id: number; tokens: number | null };

const port = parentPort!;
const say = (message: WorkerMessage) => port.postMessage(message);
const loaded: Tokenizer | Error = await import('gpt-tokenizer')
  .then(tokenizerOf)
  .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
if (loaded instanceof Error) say({ ready: false, error: loaded.message });
else {
  port.on('message', (job: CountJob) => {
    say({ id: job.id, tokens: Date.now() > job.deadline ? null : loaded.start(job.text).run(job.deadline) });
  });
  say({ ready: true });
}
