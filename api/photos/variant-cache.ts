import { readAll, type ObjectStorage } from "../../lib/storage/index.js";

/**
 * The bytes of recently served variants, in memory, the least recently used
 * dropped first, at most `maxBytes` in all (0 keeps nothing). Variants are
 * content-addressed (variants/<sha256>.webp), so a key's bytes never change
 * and nothing needs invalidating: who may see a photo is still decided per
 * request before this is asked (serve.ts), and a ready photo's objects are
 * never deleted while it names them. A hit costs no storage round trip (for
 * the local backend: open, stat, two reads and a close on the thread pool).
 */
export class VariantCache {
  private readonly entries = new Map<string, Buffer>();
  /** Reads under way, so a burst of misses on one key reads storage once. */
  private readonly reading = new Map<string, Promise<Buffer | null>>();
  private bytes = 0;

  constructor(
    private readonly storage: ObjectStorage,
    private readonly maxBytes: number,
  ) {}

  /** The object's bytes, or null when storage has no such object. */
  get(key: string): Promise<Buffer | null> {
    const hit = this.entries.get(key);
    if (hit) {
      // Map order is the recency order: move the hit to the end.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return Promise.resolve(hit);
    }
    let pending = this.reading.get(key);
    if (!pending) {
      pending = this.read(key).finally(() => this.reading.delete(key));
      this.reading.set(key, pending);
    }
    return pending;
  }

  private async read(key: string): Promise<Buffer | null> {
    const object = await this.storage.get(key);
    if (!object) return null;
    const bytes = await readAll(object.body);
    this.keep(key, bytes);
    return bytes;
  }

  private keep(key: string, bytes: Buffer): void {
    // One object may take an eighth at most, so a few large ones cannot flush everything else.
    if (bytes.length > this.maxBytes / 8 || this.entries.has(key)) return;
    this.entries.set(key, bytes);
    this.bytes += bytes.length;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= old.length;
    }
  }
}
