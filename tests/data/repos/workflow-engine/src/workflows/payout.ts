// A marketplace payout: ledger entries are posted to it as sales settle,
// and it is paid out when the payout provider confirms. Written as a
// const config like the JSON definitions, so that Studio can import it.
import { assign, createMachine } from 'xstate';

const payoutWorkflow = {
  id: 'payout',
  initial: 'open',
  context: { balanceCents: 0, postedEntryIds: [] as string[], payoutId: null as string | null },
  states: {
    open: {
      on: {
        'ledger entry posted': {
          guard: ({ context, event }: { context: { postedEntryIds: string[] }; event: { entryId: string } }) =>
            !context.postedEntryIds.includes(event.entryId),
          actions: assign({
            balanceCents: ({ context, event }: any) => context.balanceCents + event.amountCents,
            postedEntryIds: ({ context, event }: any) => [...context.postedEntryIds, event.entryId],
          }),
        },
        'period closed': 'payingOut',
      },
    },
    payingOut: {
      on: {
        'payout confirmed': {
          target: 'paidOut',
          actions: assign({ payoutId: ({ event }: any) => event.payoutId }),
        },
      },
    },
    paidOut: { type: 'final' },
  },
} as const;

export const payoutMachine = createMachine(payoutWorkflow);
