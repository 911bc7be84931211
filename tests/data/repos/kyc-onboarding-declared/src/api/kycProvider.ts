// The identity-verification provider's HTTP client. Its `verify` endpoint
// starts a new check on every call: the provider bills each one.
export interface VerificationResult {
  checkId: string;
  status: 'clear' | 'consider';
}

const BASE_URL = process.env.KYC_PROVIDER_URL ?? 'https://kyc.example.com';

export const kycProvider = {
  async verify(documentId: string): Promise<VerificationResult> {
    const response = await fetch(`${BASE_URL}/v2/checks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ documentId }),
    });
    if (!response.ok) throw new Error(`verification failed: ${response.status}`);
    return response.json();
  },
  async notifyCompliance(applicantId: string | null): Promise<void> {
    await fetch(`${BASE_URL}/v2/reviews`, { method: 'POST', body: JSON.stringify({ applicantId }) });
  },
  async sendWelcome(applicantId: string | null): Promise<void> {
    await fetch(`${BASE_URL}/v2/welcome`, { method: 'POST', body: JSON.stringify({ applicantId }) });
  },
};
