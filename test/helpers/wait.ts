/**
 * Waiting on what a test can observe, never for a fixed time: `read` is called at once and then
 * every `everyMs` until `done` holds of its result or `timeoutMs` has passed. Returns the last
 * result either way, so the caller's assertion fails with what was last seen.
 */
export async function poll<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  options: { timeoutMs?: number; everyMs?: number } = {},
): Promise<T> {
  const { timeoutMs = 10_000, everyMs = 20 } = options;
  const end = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    value = await read();
  }
  return value;
}

/** `promise`, or a failure naming `what` once `timeoutMs` has passed without it settling. */
export async function within<T>(promise: Promise<T>, what: string, timeoutMs = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Rate-limit windows are whole minutes of the clock (every process agrees on them): a test that
 * counts requests against a limit starts at least `needMs` before the minute ends, so that its
 * requests all fall in one window. Waits into the next minute when it is too late in this one.
 */
export async function clearOfMinuteEdge(needMs = 20_000): Promise<void> {
  const into = Date.now() % 60_000;
  if (60_000 - into < needMs) await new Promise((resolve) => setTimeout(resolve, 60_000 - into + 50));
}
