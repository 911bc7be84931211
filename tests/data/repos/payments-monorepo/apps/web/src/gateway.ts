// The card gateway's client; every call carries the order id as its
// idempotency key.
export const gateway = {
  async charge(orderId: string, total: number): Promise<{ chargeId: string }> {
    const response = await fetch('/api/payments', {
      method: 'POST',
      headers: { 'Idempotency-Key': orderId, 'Content-Type': 'application/json' },
      body: JSON.stringify({ orderId, amount: total }),
    });
    if (!response.ok) throw new Error(`charge failed: ${response.status}`);
    return response.json();
  },
};
