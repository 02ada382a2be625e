import { nanos, type NatsConnection } from "@nats-io/transport-node";
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerMessages,
  type JsMsg,
} from "@nats-io/jetstream";
import { z } from "zod";
import { createPool, withOwnTransaction, type Pool } from "../lib/db.js";
import { STREAM_SUBJECTS, type EventEnvelope, type EventType } from "../lib/events.js";
import type { Logger } from "../lib/logger.js";
import { InvalidEventError } from "../lib/events.js";
import { draftNotifications, handledSubjects, type HandlerRegistry } from "./handlers.js";
import { type NotificationDraft } from "../lib/notification-rows.js";
import { planGroups } from "./grouping.js";
import { enqueueDeliveries, enqueueMany } from "../jobs/queue.js";
import { uncoveredFanoutCheck } from "../jobs/fanout/fanout.js";
import { idleMatchCheck } from "../jobs/matching/matcher.js";
import { withoutIdleReactions } from "../jobs/reaction-checks.js";
import { reactionJobs, type QueuedJob, type ReactionRegistry } from "./reactions.js";
import { channelsFor, emailPreferences, insertNotifications, needingDelivery } from "../lib/notification-rows.js";

/** Default ack wait; NOTIFIER_ACK_WAIT_MS overrides it. */
export const ACK_WAIT_MS = 30_000;
/** Redelivery delay after a failed message (Postgres down): no hot loop, no long stall. */
export const NAK_DELAY_MS = 2_000;
const RESTART_DELAY_MS = 1_000;

export type ConsumerFilter = { filter_subject: string } | { filter_subjects: string[] };

export interface FilterPlan {
  filter: ConsumerFilter;
  /** True when the filter is wider than the registry, so unregistered types are acked and skipped. */
  skipsUnhandled: boolean;
}

/** True when the server's version is at least major.minor. */
export function serverAtLeast(version: string | undefined, major: number, minor: number): boolean {
  const match = /^v?(\d+)\.(\d+)/.exec(version ?? "");
  if (!match) return false;
  const [vMajor, vMinor] = [Number(match[1]), Number(match[2])];
  return vMajor > major || (vMajor === major && vMinor >= minor);
}

/**
 * The consumer's filter from the registry's subjects. NATS before 2.10 takes
 * one filter subject only, so several subjects there become the whole stream
 * (`events.>`), and the consumer acks and skips types it has no handler for.
 */
export function planFilter(subjects: string[], serverVersion: string | undefined): FilterPlan {
  if (subjects.length === 0) throw new Error("the notifier has no event handlers registered");
  if (subjects.length === 1) return { filter: { filter_subject: subjects[0]! }, skipsUnhandled: false };
  if (serverAtLeast(serverVersion, 2, 10)) return { filter: { filter_subjects: subjects }, skipsUnhandled: false };
  return { filter: { filter_subject: STREAM_SUBJECTS[0] }, skipsUnhandled: true };
}

function isNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

/**
 * Creates the durable consumer, or brings an existing one to the settings
 * below; safe on every start and from several notifiers at once. The
 * delivery policy (all) only applies on creation: an existing consumer
 * keeps its position.
 */
export async function ensureNotifierConsumer(
  nc: NatsConnection,
  stream: string,
  name: string,
  filter: ConsumerFilter,
  ackWaitMs = ACK_WAIT_MS,
): Promise<void> {
  const jsm = await jetstreamManager(nc);
  // Unset the other filter field, so a server upgrade can move between the two forms.
  const filterFields =
    "filter_subjects" in filter
      ? { filter_subjects: filter.filter_subjects, filter_subject: undefined }
      : { filter_subject: filter.filter_subject, filter_subjects: undefined };
  const settings = {
    ack_wait: nanos(ackWaitMs),
    // Messages are nak'ed while Postgres is down; they must keep coming back until it returns.
    max_deliver: -1,
    max_ack_pending: 1_000,
    ...filterFields,
  };
  try {
    await jsm.consumers.info(stream, name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      await jsm.consumers.add(stream, {
        durable_name: name,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ...settings,
      });
      return;
    } catch (addErr) {
      // Another notifier created it first: fall through to the update.
      if (!(addErr instanceof JetStreamApiError)) throw addErr;
    }
  }
  await jsm.consumers.update(stream, name, settings);
}

const Envelope = z.object({
  id: z.uuid(),
  // Any string: a type this build does not know is skipped like any unhandled one, not refused.
  type: z.string(),
  occurredAt: z.string(),
  data: z.record(z.string(), z.unknown()),
});
type RawEvent = z.output<typeof Envelope>;

/**
 * The consumer's sessions plan its prepared statements once, generically.
 * Left to choose, Postgres planned the reaction checks' statement (one per
 * batch) afresh at every execution: knowing its arrays' lengths, each custom
 * plan was estimated cheaper than the generic one, so it never switched
 * (pg_prepared_statements: 15 custom plans in 15 runs, none generic), and the
 * planning cost about 0.4 ms of Postgres CPU a create, over a third of the
 * notifier's share (`npm run bench:cost`). The consumer's statements
 * are the checks, the notification insert and add_jobs, each of the same
 * shape whatever the batch; the notifier's jobs keep the default, in their
 * own pool.
 */
export const CONSUMER_SESSION_SETTINGS = { plan_cache_mode: "force_generic_plan" } as const;

/** The consumer's own pool, with CONSUMER_SESSION_SETTINGS. */
export function createConsumerPool({ connectionString, max, logger }: { connectionString: string; max: number; logger: Logger }): Pool {
  return createPool({ connectionString, max, logger, applicationName: "notifier-consumer", settings: CONSUMER_SESSION_SETTINGS });
}

/** Messages turned into notifications in one transaction. */
export const MAX_BATCH = 100;

export interface HandledEvent {
  event: RawEvent;
  drafts: NotificationDraft[];
  jobs: QueuedJob[];
}

/** The reaction jobs' checks, in the one statement of withoutIdleReactions. */
const reactionChecks = [uncoveredFanoutCheck, idleMatchCheck] as const;

/**
 * Records the notifications and their delivery jobs for handled events, and
 * the jobs the events start (notifier/reactions.ts), in one transaction;
 * returns the ids of the events that got a new notification or were counted
 * into a grouped one (notifier/grouping.ts). The unique
 * (source event, recipient, channel) makes a redelivered event (or one a
 * second notifier handles at the same time) add no notification and no
 * delivery; its reaction jobs replace their waiting twins by job key.
 *
 * The reaction jobs' checks run first, in one statement of their own
 * (jobs/reaction-checks.ts): the fan-out starts no subscription covers
 * are recorded done (an idempotent insert, disjoint from the covered starts
 * whose jobs the transaction queues), and the matching check only reads.
 * Most events (a new report where nobody subscribed and nothing matches)
 * then have nothing left to write, and cost that one statement instead of a
 * transaction of four (measured with `npm run bench:statements`).
 */
export async function recordEvents(pool: Pool, handled: HandledEvent[]): Promise<Set<string>> {
  if (handled.length === 0) return new Set();
  return withOwnTransaction(pool, async (client) => {
    const jobs = await withoutIdleReactions(client, handled.flatMap((h) => h.jobs), reactionChecks);
    if (jobs.length === 0 && handled.every((h) => h.drafts.length === 0)) return new Set<string>();
    await client.query("begin");
    // A grouped draft counted into an earlier notification gets no rows of its own (notifier/grouping.ts).
    const groups = await planGroups(client, handled.flatMap(({ event, drafts }) => drafts.map((draft) => ({ event, draft }))));
    const recipients = [...new Set(groups.open.map(({ draft }) => draft.recipientActorId))];
    const preferences = await emailPreferences(client, recipients);
    const inserted = await insertNotifications(
      client,
      groups.open.flatMap(({ event, draft }) =>
        channelsFor(draft.kind, preferences.get(draft.recipientActorId)).map((channel) => ({
          ...draft,
          sourceEventId: event.id,
          sourceOccurredAt: event.occurredAt,
          eventType: event.type as EventType,
          channel,
        })),
      ),
    );
    await groups.fold(client);
    await enqueueDeliveries(client, needingDelivery(inserted));
    await enqueueMany(client, jobs);
    await client.query("commit");
    return new Set([...inserted.map((n) => n.sourceEventId), ...groups.counted]);
  });
}

export interface NotificationConsumerOptions {
  nc: NatsConnection;
  pool: Pool;
  logger: Logger;
  stream: string;
  name: string;
  registry: HandlerRegistry;
  /** Jobs events start besides notifications; none when omitted. */
  reactions?: ReactionRegistry;
  /** Messages handled at once. */
  concurrency: number;
  /** How long the server waits for an ack before redelivering. */
  ackWaitMs?: number;
}

/**
 * Pulls from the durable consumer with bounded concurrency and acks each
 * message only after its transaction committed. A crash between commit and
 * ack redelivers the message, which then finds its row and is just acked.
 * The nats.js consumer re-issues its pulls after a reconnect or missed
 * heartbeats; if the iterator ends anyway (consumer deleted), the loop
 * re-creates the consumer and consumes again.
 */
export class NotificationConsumer {
  private stopped = false;
  private messages: ConsumerMessages | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private loop: Promise<void> | null = null;
  private plan: FilterPlan;

  constructor(private readonly options: NotificationConsumerOptions) {
    this.plan = planFilter(this.subjects(), options.nc.info?.version);
  }

  /** Every type the notifier acts on: the notification handlers' and the reactions'. */
  private subjects(): string[] {
    return [...new Set([...handledSubjects(this.options.registry), ...Object.keys(this.options.reactions ?? {})])].sort();
  }

  get filter(): ConsumerFilter {
    return this.plan.filter;
  }

  /** Creates or updates the consumer; call before start() so a failure is a startup failure. */
  async ensure(): Promise<void> {
    const { nc, stream, name } = this.options;
    this.plan = planFilter(this.subjects(), nc.info?.version);
    await ensureNotifierConsumer(nc, stream, name, this.plan.filter, this.options.ackWaitMs);
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops pulling, then waits for the messages in flight to be committed and acked. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.messages?.close();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
  }

  private async run(): Promise<void> {
    const { nc, stream, name, logger, concurrency } = this.options;
    let first = true;
    while (!this.stopped) {
      try {
        if (!first) await this.ensure();
        first = false;
        const consumer = await jetstream(nc).consumers.get(stream, name);
        const messages = await consumer.consume({ max_messages: concurrency * 2 });
        this.messages = messages;
        if (this.stopped) await messages.close();
        void this.watch(messages);
        // Micro-batches: what arrived together is recorded in one transaction.
        let batch: JsMsg[] = [];
        let flushQueued = false;
        const flush = () => {
          flushQueued = false;
          if (batch.length === 0) return;
          const taken = batch;
          batch = [];
          const work = this.handleBatch(taken).finally(() => this.inFlight.delete(work));
          this.inFlight.add(work);
        };
        for await (const msg of messages) {
          while (this.inFlight.size >= concurrency) await Promise.race(this.inFlight);
          batch.push(msg);
          if (batch.length >= MAX_BATCH) flush();
          else if (!flushQueued) {
            flushQueued = true;
            setImmediate(flush);
          }
        }
        flush();
      } catch (err) {
        logger.warn({ err: { message: (err as Error).message } }, "notifier: consume failed; restarting");
      }
      if (!this.stopped) await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS));
    }
  }

  private async watch(messages: ConsumerMessages): Promise<void> {
    const { logger } = this.options;
    for await (const status of messages.status()) {
      switch (status.type) {
        case "heartbeats_missed":
          logger.warn({ count: status.count }, "notifier: consumer heartbeats missed");
          break;
        case "consumer_deleted":
        case "consumer_not_found":
        case "stream_not_found":
          // Leave the iterator; run() re-creates the consumer.
          logger.warn({ status: status.type }, "notifier: consumer lost; re-creating");
          await messages.close();
          return;
      }
    }
  }

  /** Parses and drafts each message, then records the good ones in one transaction and acks them after commit. */
  private async handleBatch(msgs: JsMsg[]): Promise<void> {
    const { pool, logger, registry } = this.options;
    const accepted: Array<HandledEvent & { msg: JsMsg }> = [];
    for (const msg of msgs) {
      let event: RawEvent;
      try {
        event = Envelope.parse(msg.json());
      } catch (err) {
        // A body that is not an event will never parse: stop its redelivery. (No term reason: NATS 2.9 ignores a +TERM with one.)
        logger.error({ subject: msg.subject, seq: msg.seq, err: { message: (err as Error).message } }, "notifier: malformed message");
        msg.term();
        continue;
      }
      try {
        const drafts = draftNotifications(registry, event);
        const jobs = reactionJobs(this.options.reactions ?? {}, event);
        if (!drafts && !jobs) {
          msg.ack();
          logger.info({ eventId: event.id, type: event.type, outcome: "skipped" }, "notifier: event handled");
          continue;
        }
        accepted.push({ msg, event, drafts: drafts ?? [], jobs: jobs ?? [] });
      } catch (err) {
        if (!(err instanceof InvalidEventError)) throw err;
        logger.error({ eventId: event.id, type: event.type, err: { message: err.message } }, "notifier: invalid event");
        msg.term();
      }
    }
    if (accepted.length === 0) return;
    try {
      const created = await recordEvents(pool, accepted);
      for (const { msg, event } of accepted) {
        msg.ack();
        // A batch can hold an event and its redelivery; only the first of them created the row.
        const outcome = created.delete(event.id) ? "created" : "duplicate";
        logger.info({ eventId: event.id, type: event.type, outcome }, "notifier: event handled");
      }
    } catch (err) {
      for (const { msg, event } of accepted) {
        logger.warn({ eventId: event.id, type: event.type, err: { message: (err as Error).message } }, "notifier: event failed; redelivering");
        msg.nak(NAK_DELAY_MS);
      }
    }
  }
}
