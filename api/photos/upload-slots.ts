import { Gauge, type Registry } from "../../lib/metrics.js";

/** A slot's buffer is the upload's only copy of its bytes until release. */
export interface UploadSlot {
  /** As large as the upload limit; its contents past what this upload wrote are another upload's leftovers. */
  readonly buffer: Buffer;
  /** Hands the slot and its buffer to the next upload; call once nothing reads the buffer any more. Twice is harmless. */
  release(): void;
}

/**
 * A counting semaphore for photo uploads whose slots each own one buffer of
 * the upload limit: an upload holds a slot from the moment its photo's first
 * 64 KiB have arrived (upload.ts) until its bytes are stored or refused, so
 * a client that sends headers and a few bytes and stops holds none, and at
 * most `capacity`
 * buffers exist, however many uploads arrive. They are reused rather than
 * allocated per upload: a fresh 10 MiB buffer per upload is garbage that the
 * collector frees late and the allocator returns to the system later still,
 * which is what made the process grow. Waiters are served first come, first
 * served; one that waits too long, or whose client goes away, leaves the
 * queue without a slot.
 */
export class UploadSlots {
  private held = 0;
  private readonly queue: Array<() => void> = [];
  private readonly spare: Buffer[] = [];

  constructor(
    readonly capacity: number,
    private readonly bufferBytes: number,
  ) {}

  /** Slots held now. */
  get inUse(): number {
    return this.held;
  }

  /** Uploads waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  /** A slot once one is free, or null when none came within `waitMs` or the signal aborted first. */
  acquire(waitMs: number, signal?: AbortSignal): Promise<UploadSlot | null> {
    if (signal?.aborted) return Promise.resolve(null);
    if (this.held < this.capacity && this.queue.length === 0) return Promise.resolve(this.take());
    return new Promise((resolve) => {
      const grant = () => {
        settle();
        resolve(this.take());
      };
      const giveUp = () => {
        settle();
        this.queue.splice(this.queue.indexOf(grant), 1);
        resolve(null);
      };
      const timer = setTimeout(giveUp, waitMs);
      signal?.addEventListener("abort", giveUp, { once: true });
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", giveUp);
      };
      this.queue.push(grant);
    });
  }

  private take(): UploadSlot {
    this.held += 1;
    // Uninitialised: only the pages an upload writes become resident, and nothing past its length is ever read.
    const buffer = this.spare.pop() ?? Buffer.allocUnsafeSlow(this.bufferBytes);
    let released = false;
    return {
      buffer,
      release: () => {
        if (released) return;
        released = true;
        this.held -= 1;
        this.spare.push(buffer);
        this.queue.shift()?.();
      },
    };
  }
}

/**
 * The actors with an upload being handled in this process: one at a time
 * each, so one account cannot hold several slots or places in the queue.
 * Per process, as the slots are: that is what it protects.
 */
export class UploadsInFlight {
  private readonly actors = new Set<string>();

  /** A release for the actor's upload, or null when the actor already has one in flight. */
  claim(actorId: string): (() => void) | null {
    if (this.actors.has(actorId)) return null;
    this.actors.add(actorId);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.actors.delete(actorId);
    };
  }
}

/** How full the slots are, read at scrape time: a steady queue says API_PHOTO_UPLOAD_CONCURRENCY is too low for the traffic. */
export function registerUploadSlotMetrics(registry: Registry, slots: UploadSlots): void {
  new Gauge({
    name: "photo_upload_slots_in_use",
    help: "Photo uploads being read, checked and stored now (at most API_PHOTO_UPLOAD_CONCURRENCY)",
    registers: [registry],
    collect() {
      this.set(slots.inUse);
    },
  });
  new Gauge({
    name: "photo_uploads_waiting",
    help: "Photo uploads waiting for a slot (each waits at most API_PHOTO_UPLOAD_WAIT_MS, then gets 503)",
    registers: [registry],
    collect() {
      this.set(slots.waiting);
    },
  });
}
