// Commands to other services go through the outbox: written in the same
// transaction as the workflow's snapshot, published by the relay.
import { randomUUID } from 'node:crypto';

export interface OutboxRow {
  id: string;
  topic: string;
  payload: unknown;
  createdAt: Date;
}

/** Rows written by the current step; the step's transaction inserts them. */
export const pending: OutboxRow[] = [];

export function enqueue(topic: string, payload: unknown) {
  pending.push({ id: randomUUID(), topic, payload, createdAt: new Date() });
}
