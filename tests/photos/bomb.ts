import { constants, createDeflate } from "node:zlib";

/**
 * A complete, valid 30000x30000 1-bit PNG of about 110 KB. Interlaced, so
 * libvips cannot stream it: decoding it would hold about 900 MB (measured:
 * 899 MiB more RSS and 13 s without the pixel limit).
 */
export async function decompressionBombPng(): Promise<Buffer> {
  const side = 30_000;
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    let crc = 0xffffffff;
    for (const byte of body) crc = crcTable[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
    const out = Buffer.alloc(8 + data.length + 4);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE((crc ^ 0xffffffff) >>> 0, 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr.set([1, 0, 0, 0, 1], 8); // bit depth 1, greyscale, deflate, adaptive filters, Adam7 interlace
  // All-zero rows of the seven Adam7 passes (x0, y0, dx, dy), each with its filter byte.
  const passes = [[0, 0, 8, 8], [4, 0, 8, 8], [0, 4, 4, 8], [2, 0, 4, 4], [0, 2, 2, 4], [1, 0, 2, 2], [0, 1, 1, 2]] as const;
  let remaining = 0;
  for (const [x0, y0, dx, dy] of passes) remaining += Math.ceil((side - y0) / dy) * (1 + Math.ceil(Math.ceil((side - x0) / dx) / 8));
  // Streamed through deflate, so building the bomb never holds its 112 MB of rows.
  const deflate = createDeflate({ level: constants.Z_BEST_COMPRESSION });
  const compressed: Buffer[] = [];
  deflate.on("data", (c: Buffer) => compressed.push(c));
  const done = new Promise((resolve) => deflate.on("end", resolve));
  const zeros = Buffer.alloc(1 << 20);
  while (remaining > 0) {
    const n = Math.min(remaining, zeros.length);
    deflate.write(zeros.subarray(0, n));
    remaining -= n;
  }
  deflate.end();
  await done;
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk("IHDR", ihdr), chunk("IDAT", Buffer.concat(compressed)), chunk("IEND", Buffer.alloc(0))]);
}
