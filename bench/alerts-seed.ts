import type pg from "pg";
import { log, type BenchStack } from "./stack.js";
import { round } from "./stats.js";

/**
 * The subscriptions of the alert bench (bench/alerts-fanout.ts): a country
 * of 80,000 with a dense city of 20,000, and three clusters elsewhere, each
 * with all its subscribers in range of its centre, for the cost per
 * subscriber count.
 */

export interface LatLon {
  lat: number;
  lon: number;
}

/** The country: a 7.5° × 9° box, about 830 × 700 km. */
export const COUNTRY = { south: 43, north: 50.5, west: -1.5, east: 7.5, subscriptions: 80_000 };
/** The city: its subscribers live within 10 km of its centre, each radius covering the centre. */
export const CITY = { lat: 48.8566, lon: 2.3522, radiusM: 10_000, subscriptions: 20_000 };
export const CLUSTERS = [
  { name: "1k", n: 1_000, lat: 56.0, lon: 10.0 },
  { name: "10k", n: 10_000, lat: 57.0, lon: 12.0 },
  { name: "100k", n: 100_000, lat: 58.5, lon: 14.0 },
];

/** The city's subscribers (`city-<n>`): uniform over the disc, radius 10.5–20 km, so each covers the centre. */
export async function seedCitySubscriptions(pool: pg.Pool): Promise<void> {
  await pool.query(
    `insert into alert_subscription (actor_id, location, radius_m)
     select 'city-' || g, st_project(st_setsrid(st_makepoint($2, $1), 4326)::geography, $3::float8 * sqrt(random()), radians(random() * 360)),
            10500 + random() * 9500
     from generate_series(1, $4::int) g`,
    [CITY.lat, CITY.lon, CITY.radiusM, CITY.subscriptions],
  );
}

/**
 * `count` open lost reports over a country-sized box (the alerts search's
 * scenario, and its replica twin), each with the expiry the API would give it:
 * without one, the relay's report-lifetime cron would set their expires_at 100
 * at a time during the reads. Then settled (vacuum, checkpoint) before measuring.
 */
export async function seedOpenLostReports(pool: pg.Pool, count: number): Promise<void> {
  await pool.query(
    `insert into safety_lost_report (reporter_id, species, animal_name, last_seen_at, location, coarse_location, expires_at)
     select 'seed-' || n, (array['dog','cat','bird','rabbit','other'])[1 + n % 5], 'Seed ' || n, now() - interval '1 day',
            st_setsrid(st_makepoint(lon, lat), 4326)::geography,
            st_setsrid(st_makepoint(round(lon::numeric, 2)::float8, round(lat::numeric, 2)::float8), 4326)::geography,
            now() + interval '30 days'
     from (select n, 42 + random() * 9 as lat, -4 + random() * 12 as lon from generate_series(1, $1::int) n) s`,
    [count],
  );
  await pool.query("vacuum (analyze) safety_lost_report");
  await pool.query("checkpoint");
}

export async function seed(stack: BenchStack): Promise<void> {
  const t0 = performance.now();
  // The country: anywhere in the box, radius 0.5–20 km.
  await stack.pool.query(
    `insert into alert_subscription (actor_id, location, radius_m)
     select 'country-' || g, st_setsrid(st_makepoint($1::float8 + random() * ($2::float8 - $1::float8), $3::float8 + random() * ($4::float8 - $3::float8)), 4326)::geography, 500 + random() * 19500
     from generate_series(1, $5::int) g`,
    [COUNTRY.west, COUNTRY.east, COUNTRY.south, COUNTRY.north, COUNTRY.subscriptions],
  );
  await seedCitySubscriptions(stack.pool);
  // Clusters outside the country: every subscriber within 5 km of the centre with a radius of 6–10 km.
  for (const c of CLUSTERS) {
    await stack.pool.query(
      `insert into alert_subscription (actor_id, location, radius_m)
       select $3 || '-' || g, st_project(st_setsrid(st_makepoint($2, $1), 4326)::geography, 5000 * sqrt(random()), radians(random() * 360)),
              6000 + random() * 4000
       from generate_series(1, $4::int) g`,
      [c.lat, c.lon, `cluster${c.name}`, c.n],
    );
  }
  // One subscriber in ten has an email address: their alert also goes by email, a delivery job each
  // (no SMTP_URL here, so those dead-letter at once, as the contract says).
  await stack.pool.query(
    `insert into notification_preference (actor_id, email) select actor_id, actor_id || '@example.org' from alert_subscription where random() < 0.1`,
  );
  await stack.pool.query(`analyze alert_subscription`);
  const total = COUNTRY.subscriptions + CITY.subscriptions + CLUSTERS.reduce((n, c) => n + c.n, 0);
  log(`seeded ${total} subscriptions in ${round((performance.now() - t0) / 1000, 1)} s`);
}

/**
 * `n` points where the country's and the city's subscribers live, in the same
 * proportions (1 in 5 in the city), from a fixed seed: the same load each run.
 */
export function subscriberLikePoints(n: number): LatLon[] {
  let state = 0x2545f491;
  // xorshift32: deterministic, no dependency.
  const random = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const cityShare = CITY.subscriptions / (CITY.subscriptions + COUNTRY.subscriptions);
  const metresPerDegree = 111_320;
  return Array.from({ length: n }, () => {
    if (random() < cityShare) {
      const distance = CITY.radiusM * Math.sqrt(random());
      const bearing = random() * 2 * Math.PI;
      const lat = CITY.lat + (distance * Math.cos(bearing)) / metresPerDegree;
      const lon = CITY.lon + (distance * Math.sin(bearing)) / (metresPerDegree * Math.cos((CITY.lat * Math.PI) / 180));
      return { lat: round(lat, 6), lon: round(lon, 6) };
    }
    return {
      lat: round(COUNTRY.south + random() * (COUNTRY.north - COUNTRY.south), 6),
      lon: round(COUNTRY.west + random() * (COUNTRY.east - COUNTRY.west), 6),
    };
  });
}
