export interface RoomOffer {
  roomTypeId: string;
  name: string;
  nightlyCents: number;
  available: number;
}

export async function searchAvailability(params: {
  propertyId: string;
  checkIn: string;
  checkOut: string;
  guests: number;
}): Promise<RoomOffer[]> {
  const query = new URLSearchParams({
    propertyId: params.propertyId,
    checkIn: params.checkIn,
    checkOut: params.checkOut,
    guests: String(params.guests),
  });
  const response = await fetch(`/api/availability?${query}`);
  if (!response.ok) throw new Error(`availability: ${response.status}`);
  return response.json();
}
