export { sniffImageType, IMAGE_MIME_TYPES, type ImageType } from "./sniff.js";
export { perceptualHash, hammingDistance, PHASH_PATTERN } from "./phash.js";
export { canDecodeHevcHeic } from "./heic-support.js";
export { findTruncation } from "./truncation.js";
export {
  processImage,
  inspectImage,
  ImageRejected,
  MAX_IMAGE_PIXELS,
  VARIANT_LONGEST_SIDE,
  type ImageRejectionReason,
  type ImageInfo,
  type ImageVariant,
  type ProcessedImage,
  type VariantName,
} from "./process.js";
