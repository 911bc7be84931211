import { assign, raise, setup } from 'xstate';
import { normalizePhone } from '../lib/normalize';

type FieldName = 'firstName' | 'lastName' | 'company';

// Raises an event and writes the context in one action list.
function raiseAndAssign(type: string, values: Record<string, unknown>) {
  return [raise({ type }), assign(values)];
}

export const contactFormMachine = setup({
  types: {} as {
    context: {
      formValues: Record<string, string>;
      email: string;
      phone: string;
      submitted: boolean;
    };
    events:
      | { type: 'FIELD_CHANGED'; name: FieldName; value: string }
      | { type: 'CONTACT_CHANGED'; field: 'email' | 'phone'; value: string }
      | { type: 'PHONE_PASTED'; value: string }
      | { type: 'SUBMIT' }
      | { type: 'VALIDATE' };
  },
}).createMachine({
  id: 'contactForm',
  context: { formValues: {}, email: '', phone: '', submitted: false },
  initial: 'editing',
  states: {
    editing: {
      on: {
        FIELD_CHANGED: {
          actions: assign({
            formValues: ({ context, event }) => ({
              ...context.formValues,
              [event.name]: event.value,
            }),
          }),
        },
        CONTACT_CHANGED: {
          actions: assign(({ event }) => {
            if (event.field === 'email') {
              return { email: event.value };
            }
            return { phone: event.value };
          }),
        },
        PHONE_PASTED: {
          actions: assign({ phone: ({ event }) => normalizePhone(event.value) }),
        },
        SUBMIT: {
          actions: raiseAndAssign('VALIDATE', { submitted: true }),
        },
        VALIDATE: {
          target: 'sent',
        },
      },
    },
    sent: { type: 'final' },
  },
});
