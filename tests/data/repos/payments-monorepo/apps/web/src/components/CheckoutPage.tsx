import { useMachine } from '@xstate/react';
import { createDropdownMachine } from '@payments/ui';
import { checkoutMachine } from '../machines/checkout';

export function CheckoutPage() {
  const [state, send] = useMachine(checkoutMachine);
  const dropdown = createDropdownMachine({ id: 'shipping' });
  return (
    <section data-state={String(state.value)} data-dropdown={dropdown.id}>
      <button onClick={() => send({ type: 'PAY', orderId: 'o-1', total: 4200 })}>Pay</button>
    </section>
  );
}
