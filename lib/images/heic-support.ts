import sharp from "sharp";

// A 64x48 HEVC-coded HEIC (made with libheif's heif-enc): the smallest real test of the decoder.
const HEVC_SAMPLE_BASE64 =
  "AAAAHGZ0eXBoZWljAAAAAG1pZjFoZWljbWlhZgAAAaptZXRhAAAAAAAAACFoZGxyAAAAAAAAAABwaWN0AAAAAAAAAAAAAAAAAAAA" +
  "AA5waXRtAAAAAAACAAAAEGlkYXQAAAAAAEAAMAAAADhpbG9jAQAAAERAAAIAAQAAAAAAAAHOAAEAAAAAAAAAHQACAAEAAAAAAAAA" +
  "AQAAAAAAAAAIAAAAOGlpbmYAAAAAAAIAAAAVaW5mZQIAAAEAAQAAaHZjMQAAAAAVaW5mZQIAAAAAAgAAZ3JpZAAAAADVaXBycAAA" +
  "ALNpcGNvAAAAc2h2Y0MBA3AAAAAAAAAAAAAe8AD8/fj4AAAPAyAAAQAYQAEMAf//A3AAAAMAkAAAAwAAAwAeugJAIQABACdCAQED" +
  "cAAAAwCQAAADAAADAB6gIIEFlurkprmwIAAAAwAgAAADACEiAAEABkQBwXPAiQAAABRpc3BlAAAAAAAAAEAAAABAAAAAFGlzcGUA" +
  "AAAAAAAAQAAAADAAAAAQcGl4aQAAAAADCAgIAAAAGmlwbWEAAAAAAAAAAgABAoECAAICA4QAAAAaaXJlZgAAAAAAAAAOZGltZwAC" +
  "AAEAAQAAACVtZGF0AAAAGSgBrxOA+BDhp3/2yo//rozw92hb86KQz4A=";

let probe: Promise<boolean> | null = null;

/**
 * Whether this sharp can decode HEVC-coded HEIC (iPhone photos). The prebuilt
 * sharp binaries leave the HEVC decoder out (patents), so it is usually false;
 * a sharp built against a libvips with libde265 makes it true. Probed once.
 */
export function canDecodeHevcHeic(): Promise<boolean> {
  probe ??= sharp(Buffer.from(HEVC_SAMPLE_BASE64, "base64"))
    .raw()
    .toBuffer()
    .then(
      () => true,
      () => false,
    );
  return probe;
}
