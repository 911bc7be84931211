/** How long a room is held for a guest who has not paid yet. */
export const HOLD_TTL_MS = 15 * 60 * 1000;

/** How long to wait before trying a failed capture again. */
export const RETRY_DELAY_MS = 30_000;

/** How long the search form waits for the guest to stop typing. */
export const SEARCH_DEBOUNCE_MS = 300;
