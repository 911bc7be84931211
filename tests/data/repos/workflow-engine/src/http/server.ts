import Fastify from 'fastify';
import { Queue } from 'bullmq';
import { pool } from '../db/pool.js';

const app = Fastify({ logger: true });
const results = new Queue('results', { connection: { url: process.env.REDIS_URL } });

app.post<{ Body: { definitionId: string; tenantId: string; requesterEmail: string } }>(
  '/workflows',
  async (request, reply) => {
    const { rows } = await pool.query(
      'INSERT INTO workflows (definition_id, tenant_id, requester_email) VALUES ($1, $2, $3) RETURNING id',
      [request.body.definitionId, request.body.tenantId, request.body.requesterEmail],
    );
    return reply.code(201).send({ id: rows[0].id });
  },
);

// Events from people (approvals) and from other services; queued so that
// they are applied one at a time per workflow.
app.post<{ Params: { id: string }; Body: { type: string } }>(
  '/workflows/:id/events',
  async (request, reply) => {
    const { rows } = await pool.query('SELECT definition_id FROM workflows WHERE id = $1', [
      request.params.id,
    ]);
    if (rows.length === 0) return reply.code(404).send();
    await results.add('event', {
      workflowId: request.params.id,
      definitionId: rows[0].definition_id,
      event: request.body,
    });
    return reply.code(202).send();
  },
);

await app.listen({ port: Number(process.env.PORT ?? 8080), host: '0.0.0.0' });
