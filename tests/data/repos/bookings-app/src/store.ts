import type { Snapshot } from 'xstate';

const snapshots = new Map<string, unknown>();

export async function loadSnapshot(bookingId: string) {
  return snapshots.get(bookingId) as Snapshot<unknown> | undefined as never;
}

export async function saveSnapshot(bookingId: string, snapshot: unknown) {
  snapshots.set(bookingId, snapshot);
}
