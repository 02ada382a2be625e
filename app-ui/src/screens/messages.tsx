import { useEffect, useState } from "preact/hooks";
import type { MyNotification, Page } from "../api";
import { ProblemNote, useProblem } from "../forms";
import { useI18n } from "../i18n";
import { useSession } from "../session";

/** lib/notifications.ts CONTACT_MESSAGE_KIND: a message someone sent through the service. */
const MESSAGE_KIND = "relay_message";
// The notifier's text (notifier/handlers.ts): the message, then the sender's unverified contact on this line.
/** Kinds about one of the recipient's own lost reports, which its screen shows. */
const OWN_REPORT_KINDS = new Set(["match", "sighting", "report_expiring", "report_guide"]);
const CONTACT_LINE = /\n\nReply to \(given by the sender, not verified\): (.*)(\n|$)/;

interface Message {
  text: string;
  contact: string | null;
}

export function readMessage(notification: MyNotification): Message {
  const match = CONTACT_LINE.exec(notification.body);
  const text = match ? notification.body.slice(0, match.index) : notification.body;
  // data.fromContact is the contact as the sender typed it; older notifications have it in their text only.
  const given = notification.data.fromContact;
  const contact = typeof given === "string" ? given : (match?.[1]?.trim() ?? null);
  return { text, contact };
}

/** How to answer a contact the sender typed: an email address, a phone number, or neither. */
export function replyLinks(contact: string, subject: string, quote: string): Array<{ kind: "email" | "text" | "call"; href: string }> {
  if (/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(contact)) {
    const body = `\n\n> ${quote.split("\n").join("\n> ")}`;
    return [{ kind: "email", href: `mailto:${contact}?subject=${encodeURIComponent(`Re: ${subject}`)}&body=${encodeURIComponent(body)}` }];
  }
  const digits = contact.replace(/[\s().-]/g, "");
  if (/^\+?\d{6,15}$/.test(digits)) return [{ kind: "text", href: `sms:${digits}` }, { kind: "call", href: `tel:${digits}` }];
  return [];
}

/**
 * The person's messages (relay_message notifications): what the sender wrote,
 * the contact they gave, a way to answer it, and read state. Other
 * notifications are listed below as updates.
 */
export function Messages() {
  const { m, date } = useI18n();
  const session = useSession()!;
  const [items, setItems] = useState<MyNotification[] | null>(null);
  const list = useProblem();
  const action = useProblem();

  useEffect(() => {
    void list.run(async () => setItems((await session.request<Page<MyNotification>>("GET", "/v1/me/notifications?limit=100")).items.filter((n) => n.channel === "in_app")));
  }, []);

  const markRead = (notification: MyNotification) =>
    action.run(async () => {
      if (notification.readAt) return;
      const { readAt } = await session.request<{ readAt: string }>("POST", `/v1/me/notifications/${notification.id}/read`);
      setItems((all) => all?.map((n) => (n.id === notification.id ? { ...n, readAt } : n)) ?? null);
    });

  const messages = items?.filter((n) => n.kind === MESSAGE_KIND) ?? [];
  const updates = items?.filter((n) => n.kind !== MESSAGE_KIND) ?? [];
  const replyLabel = { email: m.messages.replyEmail, text: m.messages.replyText, call: m.messages.replyCall };

  return (
    <section aria-labelledby="messages-heading">
      <h1 id="messages-heading">{m.messages.heading}</h1>
      <p class="muted">{m.messages.intro}</p>
      {list.problem && <ProblemNote problem={list.problem} />}
      {action.problem && <ProblemNote problem={action.problem} />}
      {items === null && !list.problem && <p role="status">{m.common.loading}</p>}
      {items && messages.length === 0 && <p>{m.messages.none}</p>}
      <ul class="cards">
        {messages.map((notification) => {
          const message = readMessage(notification);
          return (
            <li key={notification.id} class={notification.readAt ? "card message" : "card message unread"} data-id={notification.id}>
              <h2>
                {!notification.readAt && <span class="badge new">{m.messages.unread}</span>} {notification.subject}
              </h2>
              <p class="muted">{date(notification.createdAt)}</p>
              <blockquote>{message.text}</blockquote>
              {message.contact && (
                <p>
                  {m.messages.from}: <span class="contact">{message.contact}</span>
                </p>
              )}
              <div class="actions">
                {message.contact &&
                  replyLinks(message.contact, notification.subject, message.text).map((link) => (
                    <a key={link.kind} class="button" href={link.href} onClick={() => void markRead(notification)}>
                      {replyLabel[link.kind]}
                    </a>
                  ))}
                {!notification.readAt && (
                  <button type="button" class="secondary" onClick={() => markRead(notification)}>
                    {m.messages.markRead}
                  </button>
                )}
              </div>
            </li>
          );
        })}
      </ul>
      {updates.length > 0 && (
        <section aria-labelledby="updates-heading">
          <h2 id="updates-heading">{m.messages.updates}</h2>
          <ul class="cards">
            {updates.map((notification) => (
              <li key={notification.id} class="card" data-id={notification.id}>
                <h3>{notification.subject}</h3>
                <p class="muted">{date(notification.createdAt)}</p>
                <p class="body">{notification.body}</p>
                {typeof notification.data.lostReportId === "string" && OWN_REPORT_KINDS.has(notification.kind) && <a href={`#/reports/lost/${notification.data.lostReportId}`}>{m.reports.open}</a>}
              </li>
            ))}
          </ul>
        </section>
      )}
    </section>
  );
}
