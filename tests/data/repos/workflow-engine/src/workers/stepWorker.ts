// Applies results from the queue to their workflow: load the snapshot,
// send the event, save the snapshot and the outbox rows the step wrote,
// in one transaction. BullMQ delivers a job at least once (a stalled job
// is run again), so the same event may be applied twice.
import { Worker } from 'bullmq';
import { createActor } from 'xstate';
import { withTransaction } from '../db/pool.js';
import { pending } from '../outbox/enqueue.js';
import { machineFor } from '../workflows/registry.js';

export const worker = new Worker(
  'results',
  async (job) => {
    const { workflowId, definitionId, event } = job.data as {
      workflowId: string;
      definitionId: string;
      event: { type: string };
    };
    await withTransaction(async (db) => {
      const { rows } = await db.query('SELECT snapshot FROM workflows WHERE id = $1 FOR UPDATE', [workflowId]);
      const actor = createActor(machineFor(definitionId), { snapshot: rows[0]?.snapshot }).start();
      pending.length = 0;
      actor.send(event as never);
      await db.query('UPDATE workflows SET snapshot = $2 WHERE id = $1', [
        workflowId,
        actor.getPersistedSnapshot(),
      ]);
      for (const row of pending) {
        await db.query('INSERT INTO outbox (id, topic, payload) VALUES ($1, $2, $3)', [
          row.id,
          row.topic,
          row.payload,
        ]);
      }
      actor.stop();
    });
  },
  { connection: { url: process.env.REDIS_URL }, concurrency: 8 },
);
