import { readFileSync } from "node:fs";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { findTruncation, sniffImageType } from "../../lib/images/index.js";

/** The upload's completeness check: whole images pass, every cut-off one is caught, without decoding pixels. */
const noisy = (width = 320, height = 240) =>
  sharp({ create: { width, height, channels: 3, background: "#888", noise: { type: "gaussian", mean: 128, sigma: 40 } } });

async function wholeImages(): Promise<Array<[string, Buffer]>> {
  const frame = (colour: string) => sharp({ create: { width: 40, height: 30, channels: 3, background: colour } }).png().toBuffer();
  const animated = await sharp([await frame("#c33"), await frame("#3c3")], { join: { animated: true } }).gif().toBuffer();
  return [
    ["baseline JPEG", await noisy().jpeg().toBuffer()],
    ["progressive JPEG with EXIF", await noisy().withExif({ IFD0: { Make: "Canon" } }).jpeg({ progressive: true }).toBuffer()],
    ["JPEG with bytes after its end (a camera trailer)", Buffer.concat([await noisy().jpeg().toBuffer(), Buffer.from("TRAILER-DATA")])],
    ["PNG", await noisy().png().toBuffer()],
    ["interlaced PNG", await noisy().png({ progressive: true }).toBuffer()],
    ["GIF", await noisy(40, 60).gif().toBuffer()],
    ["animated GIF (two frames)", animated],
    ["WebP", await noisy().webp().toBuffer()],
    ["HEIC", readFileSync(new URL("./fixtures/orange-64x48.heic", import.meta.url))],
  ];
}

describe("findTruncation", () => {
  it("passes whole images of every accepted type", async () => {
    for (const [name, bytes] of await wholeImages()) {
      const type = sniffImageType(bytes);
      expect(type, name).not.toBeNull();
      expect(findTruncation(bytes, type!), name).toBeNull();
    }
  });

  it("catches each of them cut off anywhere after its signature", async () => {
    for (const [name, bytes] of await wholeImages()) {
      const type = sniffImageType(bytes)!;
      // The trailer case is whole up to its own end-of-image marker; cut before that.
      const end = name.includes("trailer") ? bytes.indexOf("TRAILER-DATA") - 2 : bytes.length;
      for (const fraction of [0.3, 0.6, 0.9, 0.99]) {
        const cut = bytes.subarray(0, Math.max(16, Math.floor(end * fraction)));
        expect(findTruncation(cut, type), `${name} cut at ${fraction}`).not.toBeNull();
      }
      expect(findTruncation(bytes.subarray(0, end - 1), type), `${name} missing its last byte`).not.toBeNull();
    }
  });
});
