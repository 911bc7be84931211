// Phone numbers and postcodes as the payment provider wants them.
export function normalizePhone(raw: string): string {
  return raw.replace(/[^0-9+]/g, '');
}

export function pickAddressFields(result: Record<string, unknown>) {
  const { city, region } = result as { city?: string; region?: string };
  return { city, region };
}
