import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEAR_OFF_STRIPS } from "../../api/share/flyer.js";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import { as, TEST_PHOTO_DIR } from "../helpers/app.js";
import { PrivacyRules } from "../helpers/privacy.js";
import { phoneJpeg, photoJobsNow, upload } from "../photos/support.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, expectProblem, freshActor, lostReportBody } from "../safety/helpers.js";
import { shortCodeOf } from "./helpers.js";

/**
 * The printable flyer, read back with poppler (pdfinfo, pdftotext, pdftoppm)
 * and its QR code decoded with zbarimg: one page whatever the report holds,
 * every script printed, nothing private on it.
 */
const PUBLIC = "https://share.example.org";
const SCREENSHOT = process.env.UPDATE_SCREENSHOTS === "1";
let h: Harness;
let work: string;
const storage = new LocalObjectStorage(TEST_PHOTO_DIR);
const { process: processNow } = photoJobsNow(() => h.api.pool, storage);

beforeAll(async () => {
  h = await startHarness({ PUBLIC_BASE_URL: PUBLIC });
  work = mkdtempSync(join(tmpdir(), "flyer-test-"));
});
afterAll(async () => {
  await h?.close();
  rmSync(work, { recursive: true, force: true });
  rmSync(TEST_PHOTO_DIR, { recursive: true, force: true });
});

const precise = { lat: 52.520008, lon: 13.404954 };
let fileCounter = 0;

/** The flyer's bytes on disk, for the poppler tools. */
function saved(pdf: Buffer): string {
  const file = join(work, `flyer-${++fileCounter}.pdf`);
  writeFileSync(file, pdf);
  return file;
}
const pdfinfo = (file: string) => execFileSync("pdfinfo", [file], { encoding: "utf8" });
const pdftext = (file: string) => execFileSync("pdftotext", ["-layout", file, "-"], { encoding: "utf8" });
const infoField = (info: string, field: string) => new RegExp(`^${field}:\\s*(.*)$`, "m").exec(info)?.[1]?.trim();

async function reportWithPhoto(overrides: Record<string, unknown> = {}) {
  const owner = freshActor("owner");
  const id = await createLostReport(h.api, owner, { location: precise, ...overrides });
  const res = await upload(h.api, `/v1/safety/lost-reports/${id}/photos`, owner, await phoneJpeg(1200, 900, 3));
  expect(res.statusCode, res.body).toBe(202);
  await processNow(res.json().id);
  return { owner, id };
}

const flyer = (kind: string, id: string, query = "", headers: Record<string, string> = {}) => call(h.api, { url: `/${kind}/${id}/flyer.pdf${query}`, headers });

describe("GET /lost/{id}/flyer.pdf", () => {
  it("is one A4 page: its QR code decodes to the page URL, printed below it; tear-off strips carry the short link; nothing private", async () => {
    const name = "Барсик";
    const description = "Ο σκύλος μου φοράει κόκκινο κολάρο. Very shy, answers to Барсик. 猫";
    const { id, owner } = await reportWithPhoto({ animal: { ...lostReportBody().animal, name, sex: "male" }, description });
    const res = await flyer("lost", id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toBe("application/pdf");
    const code = await shortCodeOf(h.api, "lost", id);
    expect(res.headers["content-disposition"]).toBe(`inline; filename="lost-dog-${code}.pdf"`);
    expect(res.headers["cache-control"]).toBe("public, max-age=300");
    expect(res.headers.etag).toMatch(/^"[\w-]+"$/);
    expect(res.rawPayload.length).toBeLessThanOrEqual(1024 * 1024);

    const file = saved(res.rawPayload);
    const info = pdfinfo(file);
    expect(infoField(info, "Pages")).toBe("1");
    expect(infoField(info, "Page size")).toMatch(/^595\.2\d* x 841\.8\d* pts \(A4\)/);
    for (const field of ["Author", "Creator", "Producer"]) expect(infoField(info, field), field).toBe("Animal Safety");
    expect(infoField(info, "Title")).toBe(`Animal Safety: LOST DOG: ${name}`);
    expect(readFileSync(file).toString("latin1")).not.toContain("PDFKit");
    const fonts = execFileSync("pdffonts", [file], { encoding: "utf8" });
    expect(fonts).toMatch(/DejaVuSans/);
    expect(fonts).not.toMatch(/ no /); // every font embedded

    const text = pdftext(file);
    expect(text).toContain(name);
    expect(text).toContain("κόκκινο");
    expect(text).toContain("\uFFFD"); // 猫 is not in DejaVu Sans: a replacement mark, and still a flyer
    expect(text).toContain(`${PUBLIC}/lost/${id}`);
    expect(text.split(`${PUBLIC}/s/${code}`).length - 1).toBeGreaterThanOrEqual(TEAR_OFF_STRIPS);
    expect(TEAR_OFF_STRIPS).toBeGreaterThanOrEqual(6);
    expect(TEAR_OFF_STRIPS).toBeLessThanOrEqual(8);
    expect(text).toMatch(/Near \d+\.\d{3}, \d+\.\d{3}/);
    const rules = new PrivacyRules().actor(owner).point(precise).text("CHIP-12345").text("scar under the left ear");
    expect(rules.violations(text)).toEqual([]);

    execFileSync("pdftoppm", ["-png", "-r", "150", "-singlefile", file, join(work, "flyer")]);
    const png = join(work, "flyer.png");
    expect(execFileSync("zbarimg", ["-q", "--raw", png], { encoding: "utf8" }).trim()).toBe(`${PUBLIC}/lost/${id}`);
    if (SCREENSHOT) copyFileSync(png, join(import.meta.dirname, "../../docs/flyer-a4.png"));
  });

  it("honours If-None-Match with 304; the ETag changes when the report or its photos change", async () => {
    const { id, owner } = await reportWithPhoto();
    const first = await flyer("lost", id);
    const etag = first.headers.etag as string;
    const again = await flyer("lost", id, "", { "if-none-match": etag });
    expect(again.statusCode).toBe(304);
    expect(again.headers.etag).toBe(etag);
    expect(again.headers["cache-control"]).toBe("public, max-age=300");
    // The same flyer twice: the cache by ETag gives the same bytes.
    expect((await flyer("lost", id)).rawPayload.equals(first.rawPayload)).toBe(true);
    expect((await flyer("lost", id, "?lang=de")).headers.etag).not.toBe(etag);
    expect((await flyer("lost", id, "?size=letter")).headers.etag).not.toBe(etag);

    const patched = await call(h.api, { method: "PATCH", url: `/v1/safety/lost-reports/${id}`, headers: as(owner), payload: { description: "Now with a blue collar" } });
    expect(patched.statusCode, patched.body).toBe(200);
    const edited = await flyer("lost", id, "", { "if-none-match": etag });
    expect(edited.statusCode).toBe(200);
    const editedTag = edited.headers.etag as string;
    expect(editedTag).not.toBe(etag);
    expect(pdftext(saved(edited.rawPayload))).toContain("Now with a blue collar");

    const photo = await upload(h.api, `/v1/safety/lost-reports/${id}/photos`, owner, await phoneJpeg(800, 600, 9));
    await processNow(photo.json().id);
    expect((await flyer("lost", id)).headers.etag).not.toBe(editedTag);
    const deleted = await call(h.api, { method: "DELETE", url: `/v1/photos/${photo.json().id}`, headers: as(owner) });
    expect(deleted.statusCode).toBe(204);
    expect((await flyer("lost", id)).headers.etag).toBe(editedTag);
  });

  it("?size=letter is US Letter; any other size and an unknown language fall back to A4 and English, never an error", async () => {
    const { id } = await reportWithPhoto();
    expect(infoField(pdfinfo(saved((await flyer("lost", id, "?size=letter")).rawPayload)), "Page size")).toMatch(/^612 x 792 pts \(letter\)/);
    for (const query of ["?size=tabloid", "?size=", "?size=a4&size=letter", "?lang=xx", "?lang=", "?size[]=x&lang[]=y"]) {
      const res = await flyer("lost", id, query);
      expect(res.statusCode, query).toBe(200);
      const file = saved(res.rawPayload);
      expect(infoField(pdfinfo(file), "Page size"), query).toMatch(/\(A4\)/);
    }
    expect(pdftext(saved((await flyer("lost", id, "?lang=xx")).rawPayload))).toContain("LOST DOG");
    expect(pdftext(saved((await flyer("lost", id, "?lang=fr")).rawPayload))).toContain("CHIEN PERDU");
  });

  it.each([
    ["5,000 Latin characters", "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(100).slice(0, 5000)],
    ["right-to-left text", "הכלב שלי ברח ליד הפארק. كلبي هرب قرب الحديقة. ".repeat(120).slice(0, 5000)],
    ["combining marks", "Z̷̢̛̛a̶̢̧l̸̨g̵o̷ ".repeat(400).slice(0, 5000)],
    ["one unbroken word", "x".repeat(5000)],
  ])("a description of %s still fits one page", async (_what, description) => {
    const id = await createLostReport(h.api, freshActor("owner"), { description });
    const res = await flyer("lost", id);
    expect(res.statusCode, res.body).toBe(200);
    expect(infoField(pdfinfo(saved(res.rawPayload)), "Pages")).toBe("1");
  });

  it("a found report's flyer says FOUND and is named after it", async () => {
    const id = await createFoundReport(h.api, freshActor("finder"), { description: "Ручной кот" });
    const res = await flyer("found", id);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-disposition"]).toMatch(/^inline; filename="found-cat-[2-9a-hjkmnp-z]{8}\.pdf"$/);
    const text = pdftext(saved(res.rawPayload));
    expect(text).toContain("FOUND CAT");
    expect(text).toContain("Ручной кот");
  });

  it("a resolved report's flyer is 410 gone; unknown and malformed ids are 404", async () => {
    const owner = freshActor("owner");
    const id = await createLostReport(h.api, owner);
    await call(h.api, { method: "POST", url: `/v1/safety/lost-reports/${id}/resolve`, headers: as(owner), payload: { outcome: "reunited" } });
    expectProblem(await flyer("lost", id), 410, "gone");
    expectProblem(await flyer("lost", "00000000-0000-4000-8000-000000000000"), 404, "not-found");
    expectProblem(await flyer("lost", "nope"), 404, "not-found");
    expect((await flyer("lost", "nope", "", { accept: "text/html" })).headers["content-type"]).toBe("text/html; charset=utf-8");
  });
});
