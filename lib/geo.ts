/**
 * Public reads never show a precise point. Points are snapped to the centre
 * of a grid cell about 1 km on each side: 0.009° of latitude, and a
 * longitude step widened by 1/cos(latitude) so cells stay square.
 */
export const CELL_DEGREES_LAT = 0.009;
export const COARSE_PRECISION_METERS = 1000;

export interface LatLon {
  lat: number;
  lon: number;
}

export function coarsen({ lat, lon }: LatLon): LatLon {
  const row = Math.floor(lat / CELL_DEGREES_LAT);
  const centreLat = Math.min(90, Math.max(-90, (row + 0.5) * CELL_DEGREES_LAT));
  const cos = Math.max(Math.cos((centreLat * Math.PI) / 180), 0.01);
  const lonStep = Math.min(CELL_DEGREES_LAT / cos, 360);
  const col = Math.floor((lon + 180) / lonStep);
  const centreLon = Math.min(180, Math.max(-180, (col + 0.5) * lonStep - 180));
  return { lat: round(centreLat, 6), lon: round(centreLon, 6) };
}

export function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** WKT for a geography parameter: `point(lon lat)`. */
export function toWkt({ lat, lon }: LatLon): string {
  return `SRID=4326;POINT(${lon} ${lat})`;
}
