import type { BusboyFileStream } from "@fastify/busboy";
import type { FastifyReply, FastifyRequest } from "fastify";
import { findTruncation, ImageRejected, inspectImage, sniffImageType, type ImageInfo } from "../../lib/images/index.js";
import { MAX_UPLOAD_BYTES } from "../../lib/photos.js";
import { ProblemError, problems } from "../../lib/problems.js";
import type { UploadSlot, UploadSlots } from "./upload-slots.js";

/**
 * Reading and checking an upload: `multipart/form-data` with exactly one file
 * part `photo`, at most MAX_UPLOAD_BYTES, taken from the stream into the
 * upload slot's buffer (upload-slots.ts) once its first SLOT_THRESHOLD_BYTES
 * have arrived; the buffer can never grow past the limit (busboy stops
 * handing over bytes there and the 413 is answered at once). Nothing here
 * stores anything.
 */

// A form has the file and perhaps a few small text fields (a caption a client sends along); anything more is refused.
const MULTIPART_LIMITS = { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 8, parts: 9, fieldSize: 4096, fieldNameSize: 100, headerPairs: 32 };

/**
 * What a form may add around the file: boundaries, part headers and the few
 * small text fields MULTIPART_LIMITS lets through. A declared Content-Length
 * past the cap plus this cannot hold a file within the cap.
 */
export const MULTIPART_ALLOWANCE_BYTES = 64 * 1024;

/** How long the rest of a body the server will not use is read and thrown away after the answer, so the client reads that answer, before the connection is closed. */
const LINGER_MS = 2_000;

/** 413 at once, from the headers alone, when the declared length already rules the upload out. */
export function refuseDeclaredOversize(request: FastifyRequest): void {
  const declared = Number(request.headers["content-length"]);
  if (declared > MAX_UPLOAD_BYTES + MULTIPART_ALLOWANCE_BYTES) throw problems.payloadTooLarge(MAX_UPLOAD_BYTES);
}

/**
 * Once the answer is sent, a body still arriving (a refusal before or while
 * reading it, a cut-off slow upload) is discarded for at most LINGER_MS and
 * then the connection is closed: closing at once could reset it before the
 * client read the answer, and never closing would let a client stream an
 * endless body for nothing. A body that ends in time keeps the connection.
 */
export function closeIfBodyUnread(request: FastifyRequest, reply: FastifyReply): void {
  reply.raw.once("finish", () => {
    const body = request.raw;
    if (body.complete || body.readableEnded) return;
    // Destroying a request whose body has not all arrived closes its connection.
    const timer = setTimeout(() => body.destroy(), LINGER_MS).unref();
    const stop = () => clearTimeout(timer);
    body.once("end", stop);
    body.once("close", stop);
  });
}

// The multipart plugin's errors, by code: limits and malformed forms are the client's.
const multipartProblems: Record<string, () => ProblemError> = {
  FST_FILES_LIMIT: () => problems.validation("exactly one file part, named photo, is allowed", [{ path: "photo", message: "more than one file" }]),
  FST_PARTS_LIMIT: () => problems.validation("the form has too many parts"),
  FST_FIELDS_LIMIT: () => problems.validation("the form has too many fields"),
  FST_PROTO_VIOLATION: () => problems.validation("a form field name is not allowed"),
  FST_INVALID_JSON_FIELD_ERROR: () => problems.validation("a form field declared as JSON is not valid JSON"),
  FST_REQ_FILE_TOO_LARGE: () => problems.payloadTooLarge(MAX_UPLOAD_BYTES),
};

function asUploadProblem(err: unknown): ProblemError {
  if (err instanceof ProblemError) return err;
  const code = (err as { code?: unknown }).code;
  const known = typeof code === "string" ? multipartProblems[code] : undefined;
  // Anything else busboy throws (no boundary, a malformed part header, the body ending mid-part) is a malformed form.
  return known ? known() : problems.validation("the multipart/form-data body is malformed");
}

/** A photo's first bytes are kept in the upload's own memory up to this much; past it the upload needs a slot (upload-slots.ts). */
export const SLOT_THRESHOLD_BYTES = 64 * 1024;

const seconds = (ms: number) => (ms < 1000 ? `${ms} ms` : `${ms / 1000} s`);

/** The read photo's bytes; `release` gives back the slot they are in, if the photo took one. */
export interface ReadPhoto {
  bytes: Buffer;
  /** Call once nothing reads `bytes` any more. Twice is harmless. */
  release(): void;
}

export interface ReadLimits {
  slots: UploadSlots;
  /** How long a photo that needs a slot waits for one, then 503 (`busy`). */
  waitMs: number;
  /** How long the body may send nothing, before its first bytes or between two, then 408. */
  idleMs: number;
  /** How long the body may take to arrive, its wait for a slot not counted, then 408. */
  deadlineMs: number;
  busy: () => ProblemError;
}

/**
 * The body's two time limits. Both stand still while the photo waits for a
 * slot: its stream is paused then, so the socket is not read and the silence
 * is the server's, not the client's.
 */
class BodyClock {
  private idle: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private deadlineLeft: number;
  private runningSince = 0;

  constructor(
    private readonly limits: Pick<ReadLimits, "idleMs" | "deadlineMs">,
    private readonly cutOff: (problem: ProblemError) => void,
  ) {
    this.deadlineLeft = limits.deadlineMs;
  }

  run(): void {
    this.runningSince = performance.now();
    const { deadlineMs } = this.limits;
    this.deadline = setTimeout(() => this.cutOff(problems.requestTimeout(`the upload did not arrive within ${seconds(deadlineMs)}`)), this.deadlineLeft);
    this.heard();
  }

  /** Bytes arrived: the idle limit starts over. */
  heard(): void {
    if (this.deadline === undefined) return;
    clearTimeout(this.idle);
    const { idleMs } = this.limits;
    this.idle = setTimeout(() => this.cutOff(problems.requestTimeout(`the upload sent nothing for ${seconds(idleMs)}`)), idleMs);
  }

  pause(): void {
    if (this.deadline === undefined) return;
    this.stop();
    this.deadlineLeft -= performance.now() - this.runningSince;
  }

  stop(): void {
    clearTimeout(this.idle);
    clearTimeout(this.deadline);
    this.idle = this.deadline = undefined;
  }
}

interface FileRead {
  bytes: Promise<Buffer>;
  /** Stops copying for good (the rest of the part is discarded); from then on nothing writes to the slot's buffer. */
  detach(): void;
  /** The slot holding the bytes, once the photo took one. */
  slot(): UploadSlot | null;
}

/**
 * The file's bytes: the first SLOT_THRESHOLD_BYTES are kept in the upload's
 * own small buffers, so a client that sends a few bytes and stops holds no
 * slot; past them the stream is paused until a slot is free (at most
 * `waitMs`, then `busy`), and the bytes are copied into the slot's buffer,
 * as large as the limit, as they arrive: no chunk list and no concatenation,
 * so an upload never costs more than its slot. A photo that ends within the
 * threshold never takes a slot. Rejects with 413 as soon as busboy reports
 * the limit passed.
 */
function readFile(file: BusboyFileStream, limits: ReadLimits, clock: BodyClock, signal: AbortSignal): FileRead {
  const head: Buffer[] = [];
  let length = 0;
  let slot: UploadSlot | null = null;
  let waiting = false;
  let detached = false;
  let ended = false;
  let fail: (err: unknown) => void = () => undefined;
  let finish: () => void = () => undefined;

  const intoSlot = (chunk: Buffer) => {
    const into = slot!.buffer;
    // busboy never hands over more than the limit; the check keeps the copy in bounds regardless.
    const taken = Math.min(into.length - length, chunk.length);
    chunk.copy(into, length, 0, taken);
    length += taken;
  };
  const takeSlot = async () => {
    waiting = true;
    file.pause();
    clock.pause();
    const granted = await limits.slots.acquire(limits.waitMs, signal);
    waiting = false;
    if (detached) return granted?.release();
    if (!granted) return fail(limits.busy());
    slot = granted;
    const kept = head.splice(0);
    length = 0;
    for (const chunk of kept) intoSlot(chunk);
    clock.run();
    // The part may have ended while its last bytes waited here.
    if (ended) return finish();
    file.resume();
  };
  const onData = (chunk: Buffer) => {
    if (slot) return intoSlot(chunk);
    // A copy: busboy's chunk is a view of the socket's read buffer, which it would keep alive.
    head.push(Buffer.from(chunk));
    length += chunk.length;
    if (length > SLOT_THRESHOLD_BYTES && !waiting) void takeSlot();
  };
  const detach = () => {
    detached = true;
    file.off("data", onData);
    // Still flowing, so the request can end.
    file.resume();
  };
  const bytes = new Promise<Buffer>((resolve, reject) => {
    fail = (err) => {
      detach();
      reject(err);
    };
    file.on("data", onData);
    file.once("limit", () => fail(problems.payloadTooLarge(MAX_UPLOAD_BYTES)));
    finish = () => {
      if (file.truncated) return reject(problems.payloadTooLarge(MAX_UPLOAD_BYTES));
      resolve(slot ? slot.buffer.subarray(0, length) : Buffer.concat(head, length));
    };
    file.once("end", () => {
      ended = true;
      if (!waiting) finish();
    });
    file.once("error", reject);
  });
  return { bytes, detach, slot: () => slot };
}

/**
 * The bytes of the one file part `photo`: 415 for a body that is not
 * multipart, 400 for a malformed or wrong form, 413 past the limit, 503 when
 * it needed a slot and none came within `waitMs`, 408 when the body sent
 * nothing for `idleMs` or has not all arrived within `deadlineMs`. The form
 * is parsed to its end (a second file is only seen there) while the file is
 * read as it arrives; a 413, 408 or 503 answers at once, without waiting for
 * the rest. On a refusal the slot, if one was taken, is already given back.
 */
export async function readPhotoPart(request: FastifyRequest, limits: ReadLimits): Promise<ReadPhoto> {
  if (!request.isMultipart()) {
    throw problems.unsupportedMediaType("send multipart/form-data with one file part named photo");
  }
  // A holder, not a variable: the loop below assigns it in a closure, which narrowing cannot follow.
  const file: { photo: FileRead | null } = { photo: null };
  let stopEarly: (err: unknown) => void = () => undefined;
  const early = new Promise<never>((_resolve, reject) => (stopEarly = reject));
  const clock = new BodyClock(limits, (problem) => stopEarly(problem));
  const parse = async () => {
    for await (const part of request.parts({ limits: MULTIPART_LIMITS })) {
      if (part.type !== "file") continue;
      if (part.fieldname !== "photo") {
        part.file.resume();
        throw problems.validation("the file part must be named photo", [{ path: part.fieldname.slice(0, 100), message: "unexpected file part" }]);
      }
      // Not awaited here: busboy ends a part that the body cuts off only by failing the form, which the loop sees.
      file.photo = readFile(part.file, limits, clock, request.signal);
      file.photo.bytes.catch(stopEarly);
    }
  };
  const parsing = parse();
  // Any bytes of the body, the form's own included, count as heard; listened to once the form parser reads the body, which it starts synchronously.
  const heard = () => clock.heard();
  request.raw.on("data", heard);
  clock.run();
  // Whichever settles first decides; the other's later failure is already answered.
  parsing.catch(() => undefined);
  early.catch(() => undefined);
  let bytes: Buffer;
  try {
    await Promise.race([parsing, early]);
    if (!file.photo) throw problems.validation("a file part named photo is required", [{ path: "photo", message: "missing" }]);
    bytes = await Promise.race([file.photo.bytes, early]);
    if (bytes.length === 0) throw problems.validation("the photo is empty", [{ path: "photo", message: "empty" }]);
  } catch (err) {
    file.photo?.detach();
    file.photo?.slot()?.release();
    throw asUploadProblem(err);
  } finally {
    clock.stop();
    request.raw.off("data", heard);
  }
  const photo = file.photo!;
  photo.detach();
  const slot = photo.slot();
  return { bytes, release: () => slot?.release() };
}

/**
 * What the bytes are, from the bytes: 415 unless they are a JPEG, PNG, WebP,
 * HEIC/HEIF (one this server can decode) or GIF; 422 validation-failed for a
 * truncated image or one over 40 megapixels, told from its headers alone.
 */
export async function checkImage(bytes: Buffer): Promise<ImageInfo> {
  const type = sniffImageType(bytes);
  if (type === null) throw problems.unsupportedMediaType("the photo must be a JPEG, PNG, WebP, HEIC/HEIF or GIF image (told from its bytes)");
  const truncation = findTruncation(bytes, type);
  if (truncation) throw problems.unprocessableImage(`the image is truncated or corrupt: ${truncation}`);
  try {
    return await inspectImage(bytes);
  } catch (err) {
    if (!(err instanceof ImageRejected)) throw err;
    if (err.reason === "unsupported-type") throw problems.unsupportedMediaType(err.message);
    throw problems.unprocessableImage(err.message);
  }
}
