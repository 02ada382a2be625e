/**
 * Rendered flyers and cards by ETag, least recently used out first, bounded
 * in bytes. An ETag names one report state, language, size and base URL
 * (routes.ts), so an entry never goes stale: a change makes a new ETag, and
 * the old entry ages out. A burst of misses on one ETag renders once.
 * `npm run bench:share` measures a warm flyer against a cold one.
 */
export class RenderCache {
  private readonly entries = new Map<string, Buffer>();
  private readonly rendering = new Map<string, Promise<Buffer>>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get size(): number {
    return this.entries.size;
  }

  async get(key: string, render: () => Promise<Buffer>): Promise<Buffer> {
    const hit = this.entries.get(key);
    if (hit) {
      // Map order is the recency order: move the hit to the end.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    let pending = this.rendering.get(key);
    if (!pending) {
      pending = render()
        .then((body) => {
          this.put(key, body);
          return body;
        })
        .finally(() => this.rendering.delete(key));
      this.rendering.set(key, pending);
    }
    return pending;
  }

  private put(key: string, body: Buffer): void {
    if (body.length > this.maxBytes) return;
    this.entries.set(key, body);
    this.bytes += body.length;
    for (const [oldest, value] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= value.length;
    }
  }
}
