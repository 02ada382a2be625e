import type { BusboyFileStream } from "@fastify/busboy";
import type { FastifyRequest } from "fastify";
import { findTruncation, ImageRejected, inspectImage, sniffImageType, type ImageInfo } from "../../lib/images/index.js";
import { MAX_UPLOAD_BYTES } from "../../lib/photos.js";
import { ProblemError, problems } from "../../lib/problems.js";

/**
 * Reading and checking an upload: `multipart/form-data` with exactly one file
 * part `photo`, at most MAX_UPLOAD_BYTES, taken from the stream into a buffer
 * that can never grow past the limit (busboy stops handing over bytes there
 * and the 413 is answered at once). Nothing here stores anything.
 */

// A form has the file and perhaps a few small text fields (a caption a client sends along); anything more is refused.
const MULTIPART_LIMITS = { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 8, parts: 9, fieldSize: 4096, fieldNameSize: 100, headerPairs: 32 };

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

/**
 * The file's bytes, copied into one buffer of the limit's size (allocated
 * uninitialised, so only the pages written become resident): no chunk list
 * and no concatenation, so an upload never costs twice its size. Rejects with
 * 413 as soon as busboy reports the limit passed.
 */
function readCapped(file: BusboyFileStream, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const buffer = Buffer.allocUnsafeSlow(limit);
    let length = 0;
    file.on("data", (chunk: Buffer) => {
      // busboy never hands over more than the limit; the check keeps the copy in bounds regardless.
      const room = limit - length;
      chunk.copy(buffer, length, 0, Math.min(room, chunk.length));
      length += Math.min(room, chunk.length);
    });
    file.once("limit", () => {
      // The rest of the part is discarded as it arrives, so the request can still end.
      file.resume();
      reject(problems.payloadTooLarge(limit));
    });
    file.once("end", () => (file.truncated ? reject(problems.payloadTooLarge(limit)) : resolve(buffer.subarray(0, length))));
    file.once("error", reject);
  });
}

/**
 * The bytes of the one file part `photo`: 415 for a body that is not
 * multipart, 400 for a malformed or wrong form, 413 past the limit. The form
 * is parsed to its end (a second file is only seen there) while the file is
 * read as it arrives; a 413 answers at once, without waiting for the rest.
 */
export async function readPhotoPart(request: FastifyRequest): Promise<Buffer> {
  if (!request.isMultipart()) {
    throw problems.unsupportedMediaType("send multipart/form-data with one file part named photo");
  }
  let photo: Promise<Buffer> | null = null;
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
      photo = readCapped(part.file, MAX_UPLOAD_BYTES);
      photo.catch(stopEarly);
    }
  };
  const parsing = parse();
  // Whichever settles first decides; the other's later failure is already answered.
  parsing.catch(() => undefined);
  early.catch(() => undefined);
  let bytes: Buffer;
  try {
    await Promise.race([parsing, early]);
    if (!photo) throw problems.validation("a file part named photo is required", [{ path: "photo", message: "missing" }]);
    bytes = await photo;
  } catch (err) {
    throw asUploadProblem(err);
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
