import type { BusboyFileStream } from "@fastify/busboy";
import type { FastifyReply, FastifyRequest } from "fastify";
import { findTruncation, ImageRejected, inspectImage, sniffImageType, type ImageInfo } from "../../lib/images/index.js";
import { MAX_UPLOAD_BYTES } from "../../lib/photos.js";
import { ProblemError, problems } from "../../lib/problems.js";

/**
 * Reading and checking an upload: `multipart/form-data` with exactly one file
 * part `photo`, at most MAX_UPLOAD_BYTES, taken from the stream into the
 * upload slot's buffer (upload-slots.ts), which can never grow past the limit
 * (busboy stops handing over bytes there and the 413 is answered at once).
 * Nothing here stores anything.
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

interface CappedRead {
  bytes: Promise<Buffer>;
  /** Stops copying for good (the rest of the part is discarded): the buffer goes to the next upload once this one is answered. */
  detach(): void;
}

/**
 * The file's bytes, copied as they arrive into `into` (the upload slot's
 * buffer, as large as the limit): no chunk list and no concatenation, so an
 * upload never costs more than its slot. Rejects with 413 as soon as busboy
 * reports the limit passed.
 */
function readCapped(file: BusboyFileStream, into: Buffer): CappedRead {
  const limit = into.length;
  let length = 0;
  const onData = (chunk: Buffer) => {
    // busboy never hands over more than the limit; the check keeps the copy in bounds regardless.
    const taken = Math.min(limit - length, chunk.length);
    chunk.copy(into, length, 0, taken);
    length += taken;
  };
  const detach = () => {
    file.off("data", onData);
    // Still flowing, so the request can end.
    file.resume();
  };
  const bytes = new Promise<Buffer>((resolve, reject) => {
    file.on("data", onData);
    file.once("limit", () => {
      detach();
      reject(problems.payloadTooLarge(limit));
    });
    file.once("end", () => (file.truncated ? reject(problems.payloadTooLarge(limit)) : resolve(into.subarray(0, length))));
    file.once("error", reject);
  });
  return { bytes, detach };
}

const seconds = (ms: number) => (ms < 1000 ? `${ms} ms` : `${ms / 1000} s`);

/**
 * The bytes of the one file part `photo`, in `into` (at most its length):
 * 415 for a body that is not multipart, 400 for a malformed or wrong form,
 * 413 past the limit, 408 when the whole body has not arrived within
 * `deadlineMs`. The form is parsed to its end (a second file is only seen
 * there) while the file is read as it arrives; a 413 or 408 answers at once,
 * without waiting for the rest. Once this returns or throws, nothing writes
 * to `into` any more.
 */
export async function readPhotoPart(request: FastifyRequest, { into, deadlineMs }: { into: Buffer; deadlineMs: number }): Promise<Buffer> {
  if (!request.isMultipart()) {
    throw problems.unsupportedMediaType("send multipart/form-data with one file part named photo");
  }
  // A holder, not a variable: the loop below assigns it in a closure, which narrowing cannot follow.
  const file: { photo: CappedRead | null } = { photo: null };
  let stopEarly: (err: unknown) => void = () => undefined;
  const early = new Promise<never>((_resolve, reject) => (stopEarly = reject));
  const parse = async () => {
    for await (const part of request.parts({ limits: MULTIPART_LIMITS })) {
      if (part.type !== "file") continue;
      if (part.fieldname !== "photo") {
        part.file.resume();
        throw problems.validation("the file part must be named photo", [{ path: part.fieldname.slice(0, 100), message: "unexpected file part" }]);
      }
      // Not awaited here: busboy ends a part that the body cuts off only by failing the form, which the loop sees.
      file.photo = readCapped(part.file, into);
      file.photo.bytes.catch(stopEarly);
    }
  };
  const deadline = setTimeout(() => stopEarly(problems.requestTimeout(`the upload did not arrive within ${seconds(deadlineMs)}`)), deadlineMs);
  const parsing = parse();
  // Whichever settles first decides; the other's later failure is already answered.
  parsing.catch(() => undefined);
  early.catch(() => undefined);
  let bytes: Buffer;
  try {
    await Promise.race([parsing, early]);
    if (!file.photo) throw problems.validation("a file part named photo is required", [{ path: "photo", message: "missing" }]);
    bytes = await file.photo.bytes;
  } catch (err) {
    throw asUploadProblem(err);
  } finally {
    clearTimeout(deadline);
    file.photo?.detach();
  }
  if (bytes.length === 0) throw problems.validation("the photo is empty", [{ path: "photo", message: "empty" }]);
  return bytes;
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
