import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LANGUAGES } from "../../api/tag/i18n/index.js";
import { NOTIFICATION_LANGUAGES } from "../../lib/notifications.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { reportGuideDrafts } from "../../notifier/report-guide/guide.js";
import { guideCatalogues } from "../../notifier/report-guide/messages.js";
import { admin, as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { createPartner, startPartnerHarness } from "../partners/support.js";
import type { Harness } from "../helpers/harness.js";
import { call, freshActor, lostReportBody } from "../safety/helpers.js";
import { startSmtpServer, type TestSmtpServer } from "./smtp.js";

/**
 * The first hour (contract part 4): filing a lost report sends its owner one
 * report_guide notification, in the filing's language, with what to do now
 * for that species, the share page, the flyer and the shelters near the
 * report; by email too when the owner's address is confirmed.
 */

const PUBLIC = "https://share.example.org";
let h: Harness;
let pipeline: Pipeline;
let smtp: TestSmtpServer;
const here = { lat: 48.8606, lon: 2.3376 };

beforeAll(async () => {
  h = await startPartnerHarness({ PUBLIC_BASE_URL: PUBLIC });
  smtp = await startSmtpServer();
  const deliverers = buildDeliverers({ SMTP_URL: smtp.url, SMTP_FROM: "Animal Safety <no-reply@example.org>", API_PUBLIC_BASE_URL: PUBLIC });
  pipeline = await startPipeline(h.api.pool, h.api.nc, { deliverers });
  // Two shelters near the Louvre, one 60 km away and one suspended next door.
  await createPartner(h, { name: "Refuge du Louvre", location: { lat: 48.8666, lon: 2.3436 }, strayHoldDays: 7 });
  await createPartner(h, { name: "Clinique Nord", kind: "vet", location: { lat: 48.9006, lon: 2.3376 }, publicContact: {} });
  await createPartner(h, { name: "Refuge de Picardie", location: { lat: 49.3996, lon: 2.3376 } });
  const suspended = await createPartner(h, { name: "Refuge suspendu", location: { lat: 48.8616, lon: 2.3386 } });
  const res = await call(h.api, { method: "POST", url: `/v1/admin/partners/${suspended.id}/suspend`, headers: admin(), payload: { reasonCode: "abuse", reasonDetail: "test" } });
  expect(res.statusCode, res.body).toBe(200);
});
afterAll(async () => {
  await pipeline?.stop();
  await smtp?.close();
  await h?.close();
});

/** A mail's text part, quoted-printable decoded to UTF-8 (nodemailer wraps long lines with soft breaks). */
function textOf(raw: string): string {
  const [head = "", ...rest] = raw.split(/\r?\n\r?\n/);
  const body = rest.join("\n\n");
  if (!/content-transfer-encoding:\s*quoted-printable/i.test(head)) return body;
  const text = body.replace(/=\r?\n/g, "");
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === "=" && /^[0-9A-F]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(text[i]!, "utf8"));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

const guideRows = (actor: string) =>
  eventually(async () => {
    const { rows } = await h.db.pool.query(
      `select channel, status, source_key, subject, body, data from notification where recipient_actor_id = $1 and kind = 'report_guide' order by channel`,
      [actor],
    );
    return rows.length > 0 ? rows : undefined;
  }, 20_000);

async function fileLost(actor: string, overrides: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await call(h.api, { method: "POST", url: "/v1/safety/lost-reports", headers: { ...as(actor), ...headers }, payload: lostReportBody(overrides) });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id as string;
}

describe("filing a lost report sends its owner the first hour's guide", () => {
  it("for a dog, in English by default: search the neighbourhood, call the shelters listed nearest first, hand out the flyer", async () => {
    const owner = freshActor("owner");
    const id = await fileLost(owner, { location: here });
    const [row] = await guideRows(owner);
    expect(row).toMatchObject({ channel: "in_app", status: "sent", source_key: `report_guide:${id}`, subject: "Your lost dog: what to do in the first hour" });
    expect(row.body).toContain("Search your neighbourhood on foot");
    expect(row.body).toContain("about half of lost dogs are found this way");
    expect(row.body).toContain("Call the shelters listed below");
    expect(row.body).toContain("Print the flyer");
    expect(row.body).toContain(`${PUBLIC}/lost/${id}`);
    expect(row.body).toContain(`${PUBLIC}/lost/${id}/flyer.pdf`);
    // Nearest first, each with its contact and its hold; none 60 km away, none suspended.
    const louvre = row.body.indexOf("Refuge du Louvre");
    const nord = row.body.indexOf("Clinique Nord");
    expect(louvre).toBeGreaterThan(0);
    expect(nord).toBeGreaterThan(louvre);
    expect(row.body).toMatch(/Refuge du Louvre, about 1 km away \(\+33 1 23 45 67 89, desk\d+@riverside-shelter\.example, 1 Quai Branly, Paris, https:\/\/riverside-shelter\.example\)\. Strays are held there 7 days/);
    expect(row.body).toMatch(/Clinique Nord, about 5 km away\. Strays are held there 5 days/);
    expect(row.body).not.toContain("Picardie");
    expect(row.body).not.toContain("suspendu");
    expect(row.body).not.toContain("hiding places");
    expect(row.data).toEqual({ lostReportId: id, shareUrl: `${PUBLIC}/lost/${id}`, flyerUrl: `${PUBLIC}/lost/${id}/flyer.pdf`, lang: "en", shelterCount: "2" });
    // It is the owner's own notification, in the app.
    const mine = await call(h.api, { method: "GET", url: "/v1/me/notifications", headers: as(owner) });
    expect(mine.json().items.map((n: { kind: string }) => n.kind)).toContain("report_guide");
  });

  it("for a cat, in the filing's language: search within 500 m, hiding places, dusk and dawn; by email to a confirmed address", async () => {
    const owner = freshActor("owner");
    const email = `${owner}@example.org`;
    const set = await call(h.api, { method: "PUT", url: "/v1/me/notification-preferences", headers: as(owner), payload: { email } });
    expect(set.statusCode, set.body).toBe(200);
    const id = await fileLost(owner, { animal: { name: "Minou", species: "cat", colors: ["black"] }, location: here }, { "accept-language": "fr-FR,fr;q=0.9,en;q=0.5" });
    const rows = await guideRows(owner);
    expect(rows.map((r: { channel: string }) => r.channel)).toEqual(["email", "in_app"]);
    const inApp = rows[1];
    expect(inApp.subject).toBe("Votre chat perdu : que faire dans la première heure");
    expect(inApp.body).toContain("dans un rayon de 500 m");
    expect(inApp.body).toContain("cachettes");
    expect(inApp.body).toContain("au crépuscule et à l'aube");
    expect(inApp.body).toContain("Appelez les refuges ci-dessous");
    expect(inApp.body).toContain("Imprimez l'affiche");
    expect(inApp.body).toMatch(/Refuge du Louvre, à environ 1 km/);
    expect(inApp.data.lang).toBe("fr");
    const mail = await eventually(async () => smtp.received.find((m) => m.to.includes(email)), 20_000);
    const text = textOf(mail.raw);
    expect(text).toContain(`${PUBLIC}/lost/${id}/flyer.pdf`);
    expect(text).toContain("dans un rayon de 500 m");
  });

  it("with no shelter within 25 km, says whom to call instead; a bird gets the general advice", async () => {
    const owner = freshActor("owner");
    await fileLost(owner, { animal: { name: "Coco", species: "bird", colors: ["green"] }, location: { lat: 45.764, lon: 4.8357 } }, { "accept-language": "es" });
    const [row] = await guideRows(owner);
    expect(row.subject).toBe("Su pájaro perdido: qué hacer en la primera hora");
    expect(row.body).toContain("Busque cerca del lugar donde desapareció");
    expect(row.body).toContain("Todavía no hay ningún refugio asociado a menos de 25 km");
    expect(row.data.shelterCount).toBe("0");
  });

  it("in German for a German filing, once per report", async () => {
    const owner = freshActor("owner");
    await fileLost(owner, { location: here }, { "accept-language": "de-AT,de;q=0.9" });
    const [row] = await guideRows(owner);
    expect(row.subject).toBe("Vermisst (Hund): was Sie in der ersten Stunde tun können");
    expect(row.body).toContain("Suchen Sie Ihre Nachbarschaft zu Fuß ab");
    expect(row.body).toMatch(/Refuge du Louvre, etwa 1 km entfernt/);
    const { rows } = await h.db.pool.query(`select count(*)::int as n from notification where kind = 'report_guide' and recipient_actor_id = $1`, [owner]);
    expect(rows[0].n).toBe(1);
  });
});

describe("the guide's catalogue", () => {
  it("has the API's languages, and every step in each", () => {
    expect([...NOTIFICATION_LANGUAGES].sort()).toEqual([...LANGUAGES].sort());
    for (const lang of NOTIFICATION_LANGUAGES) {
      const m = guideCatalogues[lang];
      expect(m.steps.dog.length).toBeGreaterThanOrEqual(1);
      expect(m.steps.cat.length).toBeGreaterThanOrEqual(3);
      expect(m.always).toHaveLength(2);
      expect(m.steps.cat[0]).toContain("500 m");
    }
  });

  it("writes nothing for an event without a share page (written before the guide existed)", () => {
    const drafts = reportGuideDrafts({
      reportId: crypto.randomUUID(),
      reporterId: "owner-x",
      species: "dog",
      location: { lat: 48.86, lon: 2.34 },
      lastSeenAt: "2025-11-20T08:00:00Z",
    });
    expect(drafts).toEqual([]);
  });
});
