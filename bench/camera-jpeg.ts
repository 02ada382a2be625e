import sharp from "sharp";

/** What a phone writes into a photo: the camera, and the GPS position the variants must never carry. */
const PHONE_EXIF = {
  IFD0: { Make: "Google", Model: "Pixel 7", Software: "HDR+ 1.0.540104767zd" },
  IFD3: { GPSLatitudeRef: "N", GPSLatitude: "48/1 51/1 2400/100", GPSLongitudeRef: "E", GPSLongitude: "2/1 21/1 800/100" },
};

/**
 * A 12-megapixel camera-like JPEG (4000x3000, gradient and a subject under
 * gaussian grain, quality 92, with phone EXIF): about 4 MB, like a phone's
 * photo, since grain is what makes real photos large. Takes a second or two.
 */
export async function cameraLikeJpeg(): Promise<Buffer> {
  const width = 4000;
  const height = 3000;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#6b8e5a"/><stop offset="1" stop-color="#d9c7a3"/></linearGradient></defs>
    <rect width="100%" height="100%" fill="url(#g)"/><circle cx="1800" cy="1500" r="900" fill="#7a5230"/></svg>`;
  const grain = await sharp({
    create: { width, height, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 16 } },
  })
    .raw()
    .toBuffer();
  return sharp(Buffer.from(svg))
    .composite([{ input: grain, raw: { width, height, channels: 3 }, blend: "overlay" }])
    .withExif(PHONE_EXIF)
    .jpeg({ quality: 92 })
    .toBuffer();
}

/**
 * The same picture as other bytes: a JPEG comment segment (COM) after the
 * start-of-image marker. Each upload then has its own content hash, as each
 * photo a phone takes does, without re-encoding 12 megapixels every time.
 */
export function withComment(jpeg: Buffer, comment: string): Buffer {
  const text = Buffer.from(comment, "latin1");
  const segment = Buffer.alloc(4);
  segment.writeUInt16BE(0xfffe, 0);
  segment.writeUInt16BE(text.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), segment, text, jpeg.subarray(2)]);
}
