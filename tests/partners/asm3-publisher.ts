/**
 * ASM3's found-animal publisher, replayed: `run()` of
 * src/asm3/publishers/petcolovelost.py (sheltermanager/asm3 at commit
 * 625abaf704bea64c55e9fa492583ad32a2c8590e) with the requests-based helpers
 * of src/asm3/utils.py, written again here statement for statement over a
 * small model of a shelter's ASM3 database, so tests and the bench send
 * exactly what it sends, in its order, and read each answer the way it
 * reads it. Where the publisher would raise, this throws, and the animal
 * counts as failed as it does there.
 *
 * The helpers, as the publisher uses them:
 * - post_json / patch_json: post_data with contenttype application/json,
 *   which sets Content-Type on the caller's headers dict (the run reuses
 *   that dict for the photo POST) and adds `User-Agent: Animal Shelter
 *   Manager/<VERSION>`; requests adds Accept, Accept-Encoding and
 *   Connection, and Content-Length for the body.
 * - purgeImages and removeAnimal: post_data(url, "", httpmethod="DELETE")
 *   with a fresh headers dict and no contenttype: requests sends no body, no
 *   Content-Type and `Content-Length: 0`.
 * - json(): Python's json.dumps (", " and ": " between items, non-ASCII as
 *   \uXXXX escapes, floats with a decimal point) with "</" written "<\/".
 * - json_parse(): json.loads, which raises on anything that is not JSON.
 * - format_date(d): "%Y-%m-%d", "" for no date.
 */

export const ASM3_COMMIT = "625abaf704bea64c55e9fa492583ad32a2c8590e";
const VERSION = "49r4";
const REQUESTS_HEADERS = { "user-agent": `Animal Shelter Manager/${VERSION}`, "accept-encoding": "gzip, deflate", accept: "*/*", connection: "keep-alive" };
export const IDTYPE_PETCOLOVELOST = "petcolovelost";

/** A float as Python holds it: json.dumps writes 424.0, never 424. */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** Python's json.dumps(obj) with ensure_ascii, then asm3.utils.json's "</" → "<\/". */
export function pyJson(value: unknown): string {
  const dump = (v: unknown): string => {
    if (v instanceof PyFloat) return Number.isInteger(v.value) ? `${v.value}.0` : String(v.value);
    if (Array.isArray(v)) return `[${v.map(dump).join(", ")}]`;
    if (v !== null && typeof v === "object") return `{${Object.entries(v).map(([k, x]) => `${ascii(k)}: ${dump(x)}`).join(", ")}}`;
    if (typeof v === "string") return ascii(v);
    return JSON.stringify(v ?? null);
  };
  return dump(value).replaceAll("</", "<\\/");
}

const ascii = (s: string) => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** asm3.i18n.format_date with its default format. */
export const formatDate = (d: Date | null): string => (d ? d.toISOString().slice(0, 10) : "");

export interface HttpRequest {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Path and query under the publisher's base URL. */
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

export interface HttpResponse {
  status: number;
  body: string;
}

/** The HTTP client under the publisher: inject in tests, fetch in the bench. */
export type Transport = (request: HttpRequest) => Promise<HttpResponse>;

/** One photo of an animal in ASM3's media table. */
export interface Media {
  ID: number;
  DATE: Date;
}

/** An animal as getAnimalDataQuery selects it, with what the publisher keeps beside it. */
export interface AsmAnimal {
  ID: number;
  SHELTERCODE: string;
  ANIMALNAME: string;
  BREEDNAME1: string;
  BREEDNAME2: string;
  IDENTICHIPNUMBER: string;
  IDENTICHIP2NUMBER: string;
  DATEOFBIRTH: Date | null;
  DATEBROUGHTIN: Date;
  WEIGHT: number;
  PICKUPADDRESS: string;
  ANIMALCOMMENTS: string;
  SPECIESNAME: "Dog" | "Cat";
  SIZE: string;
  NEUTERED: 0 | 1;
  DECLAWED: 0 | 1;
  SEX: 0 | 1;
  LASTCHANGEDDATE: Date;
  ARCHIVED: 0 | 1;
  /** ExtraIDs: the Petco Love Lost id, once a create answered one. */
  EXTRAIDS: Record<string, string>;
  media: Media[];
}

/**
 * The n-th of many strays taken in on `intake`, as a first publish of a
 * whole shelter sends them (the full-run test, the bench): a dog or a cat
 * by turns, with a chip and one photo.
 */
export function stray(n: number, intake: Date): AsmAnimal {
  const cat = n % 2 === 1;
  return {
    ID: 10_000 + n,
    SHELTERCODE: `S${10_000 + n}`,
    ANIMALNAME: `Stray ${n}`,
    BREEDNAME1: cat ? "Domestic Short Hair" : "Beagle",
    BREEDNAME2: "",
    IDENTICHIPNUMBER: `2502685${String(n).padStart(8, "0")}`,
    IDENTICHIP2NUMBER: "",
    DATEOFBIRTH: null,
    DATEBROUGHTIN: intake,
    WEIGHT: 12.5,
    PICKUPADDRESS: "12 Rue Cler",
    ANIMALCOMMENTS: "Came in as a stray, friendly.",
    SPECIESNAME: cat ? "Cat" : "Dog",
    SIZE: "Medium",
    NEUTERED: 0,
    DECLAWED: 0,
    SEX: cat ? 1 : 0,
    LASTCHANGEDDATE: intake,
    ARCHIVED: 0,
    EXTRAIDS: {},
    media: [{ ID: 50_000 + n, DATE: intake }],
  };
}

export interface PublisherLog {
  info: string[];
  errors: string[];
}

/** A shelter's ASM3: its animals, what it recorded as published, and the publisher's settings. */
export class Asm3Shelter {
  animals: AsmAnimal[] = [];
  /** animalpublished rows of this publisher: animal id → when. */
  published = new Map<number, Date>();
  /** asm3.publish.get_last_published: the last run's time. */
  lastPublished: Date | null = null;
  log: PublisherLog = { info: [], errors: [] };

  constructor(
    readonly auth: { email: string; password: string; apiKey: string; shelterId: string },
    readonly serviceUrl: string,
    readonly database: string,
    readonly weightUnit: "kg" | "lb",
    private readonly send: Transport,
  ) {}

  /** getPhotoUrls: the animal's JPEGs, preferred first. */
  photoUrls(an: AsmAnimal): string[] {
    return an.media.map((m) => `${this.serviceUrl}?account=${this.database}&method=media_image&mediaid=${m.ID}&ts=${Math.floor(m.DATE.getTime() / 1000)}`);
  }

  private async postData(method: HttpRequest["method"], path: string, data: string, contenttype: string, headers: Record<string, string>): Promise<HttpResponse> {
    if (contenttype !== "") headers["Content-Type"] = contenttype;
    const wire: Record<string, string> = { ...REQUESTS_HEADERS };
    for (const [k, v] of Object.entries(headers)) wire[k.toLowerCase()] = v;
    wire["content-length"] = String(Buffer.byteLength(data, "utf8"));
    return this.send({ method, path, headers: wire, body: data === "" ? undefined : data });
  }

  private postJson = (path: string, json: string, headers: Record<string, string>) => this.postData("POST", path, json, "application/json", headers);
  private patchJson = (path: string, json: string, headers: Record<string, string>) => this.postData("PATCH", path, json, "application/json", headers);

  /** getAuthDetails: the login, and the token read from its answer. */
  async getAuthDetails(): Promise<string> {
    const headers = { "x-api-key": this.auth.apiKey, "Content-Type": "application/json" };
    const response = await this.postJson("/v2/auth/login", pyJson({ email: this.auth.email, password: this.auth.password }), headers);
    return jsonParse(response.body).accessToken as string;
  }

  /** getAnimalData: the animals not archived, dogs and cats (the entry type and cruelty case are the model's own). */
  getAnimalData(): AsmAnimal[] {
    return this.animals.filter((an) => an.ARCHIVED === 0 && (an.SPECIESNAME === "Dog" || an.SPECIESNAME === "Cat"));
  }

  /** processAnimal: the POST body, key for key in its order. */
  processAnimal(an: AsmAnimal): Record<string, unknown> {
    const weight = this.weightUnit === "kg" ? Math.round(an.WEIGHT * 35.274) : new PyFloat(an.WEIGHT * 16);
    const breed = an.BREEDNAME2 ? `${an.BREEDNAME1} ${an.BREEDNAME2}` : an.BREEDNAME1;
    const chip = an.IDENTICHIP2NUMBER ? `${an.IDENTICHIPNUMBER} ${an.IDENTICHIP2NUMBER}` : an.IDENTICHIPNUMBER;
    const ro: Record<string, unknown> = {
      externalId: an.SHELTERCODE,
      displayId: an.SHELTERCODE,
      birthDate: formatDate(an.DATEOFBIRTH),
      description: an.ANIMALCOMMENTS,
      address: { city: "", country: "", line1: an.PICKUPADDRESS, line2: "", postalCode: "", state: "" },
      intakeDate: formatDate(an.DATEBROUGHTIN),
      name: an.ANIMALNAME,
      metadata: { system_animal_id: an.ID },
      microchip: chip,
      shelterId: this.auth.shelterId,
      species: an.SPECIESNAME.toLowerCase(),
      status: "found",
      size: an.SIZE.toUpperCase(),
      altered: an.NEUTERED === 1,
      breed,
      weight,
    };
    if (an.SPECIESNAME.toLowerCase() === "cat") ro.declawed = an.DECLAWED === 1;
    ro.sex = an.SEX === 0 ? "female" : "male";
    return ro;
  }

  /** purgeImages: DELETE {url}/v2/animals/{pcllaid}/photos, answer unread. */
  private async purgeImages(token: string, pcllaid: string): Promise<void> {
    await this.postData("DELETE", `/v2/animals/${pcllaid}/photos`, "", "", { "x-api-key": this.auth.apiKey, Authorization: `Bearer ${token}` });
  }

  /** removeAnimal: DELETE {url}/v2/animals/{pcllaid}, answer unread. */
  private async removeAnimal(token: string, pcllaid: string): Promise<HttpResponse> {
    return this.postData("DELETE", `/v2/animals/${pcllaid}`, "", "", { "x-api-key": this.auth.apiKey, Authorization: `Bearer ${token}` });
  }

  /** run(), at `now`: what the publisher does on each scheduled run. */
  async run(now: Date): Promise<{ processed: number[]; removed: number[] }> {
    const token = await this.getAuthDetails();
    const lastpublished = this.lastPublished;
    const animals = this.getAnimalData();
    const since = lastpublished ?? new Date(now.getTime() - 90 * 86_400_000);
    const processed: AsmAnimal[] = [];
    const processedIds: number[] = [];
    for (const an of animals) {
      let anchanged = true;
      try {
        const headers: Record<string, string> = { "x-api-key": this.auth.apiKey, Authorization: `Bearer ${token}` };
        const payload = this.processAnimal(an);
        let pcllid = an.EXTRAIDS[IDTYPE_PETCOLOVELOST] ?? "";
        let r: HttpResponse | undefined;
        if (lastpublished && an.LASTCHANGEDDATE < lastpublished) {
          this.log.info.push(`Skipping: ${an.SHELTERCODE} as not changed since last publish`);
          anchanged = false;
          processedIds.push(an.ID);
        } else if (pcllid) {
          // An update goes without shelterId and species: the publisher drops both before it PATCHes.
          delete payload.shelterId;
          delete payload.species;
          r = await this.patchJson(`/v2/animals/${pcllid}`, pyJson(payload), headers);
        } else {
          r = await this.postJson("/v2/animals", pyJson(payload), headers);
        }
        const recentlyChangedImages = an.media.filter((m) => m.DATE >= since).length;
        if (anchanged || recentlyChangedImages) {
          if (anchanged) {
            if (r!.status === 200 || r!.status === 201) {
              const responsejson = jsonParse(r!.body);
              if (!pcllid) pcllid = responsejson.id as string;
              an.EXTRAIDS[IDTYPE_PETCOLOVELOST] = pcllid;
            } else {
              this.log.errors.push(`Error: HTTP ${r!.status}, response: ${r!.body}`);
            }
          }
          await this.purgeImages(token, pcllid);
          const photourls = this.photoUrls(an);
          if (photourls.length) {
            const imagepayload = { photos: photourls.map((url) => ({ url })) };
            const pr = await this.postJson(`/v2/animals/${pcllid}/photos`, pyJson(imagepayload), headers);
            const prjson = jsonParse(pr.body);
            if (typeof prjson !== "object" || prjson === null || Array.isArray(prjson)) throw new TypeError("'list' object has no attribute 'keys'");
            if ("id" in prjson) this.log.info.push(`Successfully processed ${photourls.length} x photo`);
            else if ("message" in prjson) this.log.info.push(`Error processing photo(s): ${String(prjson.message)}`);
            else throw new Error("KeyError: 'message'");
          } else {
            this.log.info.push("No photos found");
          }
          processed.push(an);
          processedIds.push(an.ID);
        }
      } catch (err) {
        this.log.errors.push(`Failed processing animal: ${an.SHELTERCODE}, ${(err as Error).message}`);
      }
    }
    // getRecordedPublishedAnimals, less those processed (or skipped as unchanged) now.
    const removed: number[] = [];
    for (const an of this.animals.filter((a) => this.published.has(a.ID) && !processedIds.includes(a.ID))) {
      const pcllid = an.EXTRAIDS[IDTYPE_PETCOLOVELOST] ?? "";
      if (pcllid) await this.removeAnimal(token, pcllid);
      an.EXTRAIDS[IDTYPE_PETCOLOVELOST] = "";
      removed.push(an.ID);
    }
    // markAnimalsPublished: only the animals processed.
    for (const an of processed) this.published.set(an.ID, now);
    this.lastPublished = now;
    return { processed: processed.map((a) => a.ID), removed };
  }
}

/** json.loads: raises on anything that is not JSON, an empty body included. */
function jsonParse(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new Error(`json.decoder.JSONDecodeError: Expecting value: ${JSON.stringify(text.slice(0, 40))}`);
  }
}
