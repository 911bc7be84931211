// Publishes outbox rows to the queue, oldest first, and marks them sent.
// A crash between the publish and the update publishes a row again:
// consumers must tolerate duplicates.
import { Queue } from 'bullmq';
import { pool } from '../db/pool.js';

const queue = new Queue('commands', { connection: { url: process.env.REDIS_URL } });
const BATCH = 100;

export async function relayOnce(): Promise<number> {
  const { rows } = await pool.query(
    'SELECT id, topic, payload FROM outbox WHERE sent_at IS NULL ORDER BY created_at LIMIT $1',
    [BATCH],
  );
  for (const row of rows) {
    await queue.add(row.topic, row.payload, { jobId: row.id });
    await pool.query('UPDATE outbox SET sent_at = now() WHERE id = $1', [row.id]);
  }
  return rows.length;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (;;) {
    const sent = await relayOnce();
    if (sent === 0) await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
