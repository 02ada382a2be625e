import { useCallback, useState } from "preact/hooks";
import { MODERATION_ACTIONS, query, type ModerationAction, type ModerationItem, type Page } from "../api";
import { ReportAlertsPanel } from "./report-alerts";
import { ReportMatches } from "./report-matches";
import { PhotoTarget } from "./photo-target";
import { Choice, Id, ListTable, Outcome, ScreenLayout, submit, time, useApi, useLoadOnMount, usePagedList, useRowOutcomes } from "../ui";

const STATUSES = ["", "open", "claimed", "escalated"] as const;
type Status = (typeof STATUSES)[number];
const COLUMNS = ["Reported", "Target", "Reason", "Reporter", "Status", "Content", "Action"];

export function Moderation() {
  const { session, request } = useApi();
  const [status, setStatus] = useState<Status>("");
  const fetchPage = useCallback(
    (cursor: string | null) => request<Page<ModerationItem>>("GET", `/v1/admin/moderation/queue${query({ status, cursor })}`),
    [request, status],
  );
  const list = usePagedList(fetchPage);
  useLoadOnMount(list.load);
  const { outcomes, run } = useRowOutcomes();

  const replace = (item: ModerationItem) => list.setItems((items) => items.map((i) => (i.id === item.id ? item : i)));

  const claim = (item: ModerationItem) =>
    run(item.id, async () => {
      replace(await request<ModerationItem>("POST", `/v1/admin/moderation/${item.id}/claim`));
      return "claimed by you";
    });

  const act = (item: ModerationItem, action: ModerationAction, note: string) =>
    run(item.id, async () => {
      const updated = await request<ModerationItem>("POST", `/v1/admin/moderation/${item.id}/action`, {
        action,
        ...(note.trim() ? { note: note.trim() } : {}),
      });
      replace(updated);
      return action === "escalate" ? "escalated; the claim is released" : `resolved: ${action}`;
    });

  return (
    <ScreenLayout
      title="Moderation queue"
      description="Unresolved reports, oldest first. Claim an item before acting on it; quarantine and remove hide the content from every public read."
    >
      <form class="filters" onSubmit={submit(list.load)}>
        <Choice<Status> label="Status" options={STATUSES} value={status} anyLabel="all unresolved" onChange={setStatus} />
        <button type="submit">Refresh</button>
      </form>
      <ListTable list={list} columns={COLUMNS} noun="item" empty="The queue is empty.">
        {list.items.map((item) => (
            <tr key={item.id} data-id={item.id}>
              <td>{time(item.createdAt)}</td>
              <td>
                {item.targetType} <Id value={item.targetId} />
                {item.targetType === "lost_report" && <ReportAlertsPanel reportId={item.targetId} />}
                {(item.targetType === "lost_report" || item.targetType === "found_report") && (
                  <ReportMatches targetType={item.targetType} targetId={item.targetId} />
                )}
                {item.targetType === "photo" && <PhotoTarget item={item} />}
              </td>
              <td>
                <strong>{item.reason}</strong>
                {item.details && <div class="muted">{item.details}</div>}
              </td>
              <td>{item.reporterId}</td>
              <td>
                <span class={`badge ${item.status}`}>{item.status}</span>
                {item.claimedBy && <div class="muted">by {item.claimedBy}</div>}
                {item.resolution && <div class="muted">{item.resolution}</div>}
              </td>
              <td>{item.contentState ? <span class={`badge ${item.contentState}`}>{item.contentState}</span> : <span class="muted">visible</span>}</td>
              <td class="actions">
                <ModerationControls item={item} me={session.actorId} busy={outcomes[item.id]?.busy === true} onClaim={claim} onAct={act} />
                <Outcome outcome={outcomes[item.id]} />
              </td>
            </tr>
        ))}
      </ListTable>
    </ScreenLayout>
  );
}

function ModerationControls(props: {
  item: ModerationItem;
  me: string | null;
  busy: boolean;
  onClaim(item: ModerationItem): unknown;
  onAct(item: ModerationItem, action: ModerationAction, note: string): unknown;
}) {
  const { item, me, busy } = props;
  const [action, setAction] = useState<ModerationAction>("dismiss");
  const [note, setNote] = useState("");
  if (item.status === "resolved") return null;
  // The API decides who holds a claim; without a known actor id the operator may still try to act.
  const mine = item.status === "claimed" && (me === null || item.claimedBy === me);
  if (!mine) {
    return (
      <button type="button" disabled={busy} onClick={() => props.onClaim(item)}>
        Claim
      </button>
    );
  }
  return (
    <form class="inline" onSubmit={submit(() => props.onAct(item, action, note))}>
      <select aria-label="Moderation action" value={action} onChange={(e) => setAction(e.currentTarget.value as ModerationAction)}>
        {MODERATION_ACTIONS.map((a) => (
          <option key={a} value={a}>
            {a}
          </option>
        ))}
      </select>
      <input aria-label="Note" placeholder="note (optional)" maxLength={2000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
      <button type="submit" disabled={busy}>
        Apply
      </button>
    </form>
  );
}
