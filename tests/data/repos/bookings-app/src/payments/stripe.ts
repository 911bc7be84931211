import Stripe from 'stripe';

export const stripe = new Stripe(process.env.STRIPE_SECRET_KEY ?? 'sk_test_missing', {
  apiVersion: '2024-10-28.acacia',
});

/** Authorises the booking's total on the guest's card; captured at check-in. */
export async function createPaymentIntent(bookingId: string, amountCents: number) {
  const intent = await stripe.paymentIntents.create({
    amount: amountCents,
    currency: 'eur',
    capture_method: 'manual',
    metadata: { bookingId },
  });
  return { paymentIntentId: intent.id, clientSecret: intent.client_secret };
}

export async function capturePayment(paymentIntentId: string) {
  const intent = await stripe.paymentIntents.capture(paymentIntentId);
  return { capturedCents: intent.amount_received };
}

/** Charges extras (minibar, late check-out) to the card on file. */
export async function chargeExtras(customerId: string, amountCents: number, description: string) {
  const intent = await stripe.paymentIntents.create({
    amount: amountCents,
    currency: 'eur',
    customer: customerId,
    description,
    confirm: true,
    off_session: true,
  });
  return { paymentIntentId: intent.id };
}

export async function refund(paymentIntentId: string, amountCents?: number) {
  return stripe.refunds.create({ payment_intent: paymentIntentId, amount: amountCents });
}
