import Fastify from 'fastify';
import { createActor } from 'xstate';
import { reservationMachine } from '@bookings/machines';
import { loadSnapshot, saveSnapshot } from './store';

const app = Fastify({ logger: true });

// Stripe and the PMS post their events here; both retry until they get a 2xx.
app.post<{ Params: { bookingId: string }; Body: { type: string } & Record<string, unknown> }>(
  '/bookings/:bookingId/events',
  async (request, reply) => {
    const snapshot = await loadSnapshot(request.params.bookingId);
    const actor = createActor(reservationMachine, { snapshot }).start();
    actor.send(request.body as never);
    await saveSnapshot(request.params.bookingId, actor.getPersistedSnapshot());
    actor.stop();
    return reply.code(204).send();
  },
);

app.listen({ port: Number(process.env.PORT ?? 3000), host: '0.0.0.0' });
