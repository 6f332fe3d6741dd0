/**
 * Prompt-cache and reasoning tokens a mock vendor reports beside its word-count usage (the
 * `cache` fault of mock-vendor.ts and loopback-vendor.ts), in each vendor's own names: the word
 * count stays the uncached prompt, `read` and `write` are added to it (OpenAI and Gemini count
 * them in the prompt, Anthropic and Bedrock apart; OpenAI and Gemini report no writes), and
 * `reasoning` is added to the output.
 */
export interface CacheUsage {
  read?: number;
  write?: number;
  /** Of `write`, kept one hour (Anthropic's cache_creation.ephemeral_1h_input_tokens). */
  write1h?: number;
  reasoning?: number;
}

interface Counts {
  promptTokens: number;
  completionTokens: number;
}

const sums = (r: Counts, c: CacheUsage | undefined) => ({
  read: c?.read ?? 0,
  write: c?.write ?? 0,
  write1h: c?.write1h ?? 0,
  reasoning: c?.reasoning ?? 0,
  output: r.completionTokens + (c?.reasoning ?? 0),
});

export function openaiUsageOf(r: Counts, c?: CacheUsage) {
  const s = sums(r, c);
  const prompt = r.promptTokens + s.read;
  return {
    prompt_tokens: prompt,
    completion_tokens: s.output,
    total_tokens: prompt + s.output,
    ...(c
      ? {
          prompt_tokens_details: { cached_tokens: s.read, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: s.reasoning, audio_tokens: 0 },
        }
      : {}),
  };
}

export function responsesUsageOf(r: Counts, c?: CacheUsage) {
  const s = sums(r, c);
  const input = r.promptTokens + s.read;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: s.read },
    output_tokens: s.output,
    output_tokens_details: { reasoning_tokens: s.reasoning },
    total_tokens: input + s.output,
  };
}

/** Anthropic's usage; `output` in place of the reply's count (message_start says 1). */
export function anthropicUsageOf(r: Counts, c?: CacheUsage, output = r.completionTokens) {
  const s = sums(r, c);
  return {
    input_tokens: r.promptTokens,
    output_tokens: output,
    ...(c
      ? {
          cache_creation_input_tokens: s.write,
          cache_read_input_tokens: s.read,
          cache_creation: { ephemeral_5m_input_tokens: s.write - s.write1h, ephemeral_1h_input_tokens: s.write1h },
        }
      : {}),
  };
}

export function geminiUsageOf(r: Counts, c?: CacheUsage) {
  const s = sums(r, c);
  const prompt = r.promptTokens + s.read;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: r.completionTokens,
    totalTokenCount: prompt + s.output,
    ...(s.read ? { cachedContentTokenCount: s.read } : {}),
    ...(s.reasoning ? { thoughtsTokenCount: s.reasoning } : {}),
  };
}

export function converseUsageOf(r: Counts, c?: CacheUsage) {
  const s = sums(r, c);
  return {
    inputTokens: r.promptTokens,
    outputTokens: s.output,
    totalTokens: r.promptTokens + s.read + s.write + s.output,
    ...(c ? { cacheReadInputTokens: s.read, cacheWriteInputTokens: s.write } : {}),
  };
}
