import { assign, setup } from 'xstate';

interface CartLine {
  sku: string;
  quantity: number;
}

// The ids once each, in the order first added.
const withId = (ids: string[], id: string) => [...new Set([...ids, id])];

export const cartMachine = setup({
  types: {} as {
    context: {
      itemIds: string[];
      savedForLater: string[];
      lines: CartLine[];
      couponCodes: string[];
      giftNotes: string[];
      wishlist: string[];
    };
    events:
      | { type: 'ITEM_ADDED'; itemId: string }
      | { type: 'ITEM_SAVED'; itemId: string }
      | { type: 'WISHLIST_SYNCED'; itemIds: string[] }
      | { type: 'LINE_ADDED'; line: CartLine }
      | { type: 'LINE_REMOVED'; sku: string }
      | { type: 'LINE_REMOVED_BY_LABEL'; sku: string }
      | { type: 'COUPON_APPLIED'; code: string }
      | { type: 'GIFT_NOTE_ADDED'; note: string };
  },
}).createMachine({
  id: 'cart',
  context: {
    itemIds: [],
    savedForLater: [],
    lines: [],
    couponCodes: [],
    giftNotes: [],
    wishlist: [],
  },
  initial: 'shopping',
  states: {
    shopping: {
      on: {
        ITEM_ADDED: {
          actions: assign({ itemIds: ({ context, event }) => withId(context.itemIds, event.itemId) }),
        },
        ITEM_SAVED: {
          actions: assign({
            savedForLater: ({ context, event }) =>
              Array.from(new Set(context.savedForLater).add(event.itemId)),
          }),
        },
        WISHLIST_SYNCED: {
          actions: assign({
            wishlist: ({ context, event }) => [
              ...new Set([...context.wishlist, ...event.itemIds.map((id) => id.trim())]),
            ],
          }),
        },
        LINE_ADDED: {
          actions: assign({ lines: ({ context, event }) => [...context.lines, event.line] }),
        },
        LINE_REMOVED: {
          actions: assign({
            lines: ({ context, event }) => context.lines.filter((line) => line.sku !== event.sku),
          }),
        },
        LINE_REMOVED_BY_LABEL: {
          actions: assign({
            lines: ({ context, event }) =>
              context.lines.filter((line) => line.sku.toLowerCase() !== event.sku.toLowerCase()),
          }),
        },
        COUPON_APPLIED: {
          actions: assign({
            couponCodes: ({ context, event }) => context.couponCodes.concat([event.code]),
          }),
        },
        GIFT_NOTE_ADDED: {
          actions: assign({
            giftNotes: ({ context, event }) => {
              const notes = [...context.giftNotes];
              notes.push(event.note);
              return notes;
            },
          }),
        },
      },
    },
  },
});
