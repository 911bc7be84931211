/** How often a failed call to a provider is tried again. */
export const MAX_RETRIES = 3;

export const backoff = (attempt: number) => Math.min(1000 * 2 ** attempt, 30_000);
