import { CHANNELS, FAILURE_STATUSES } from "../../../lib/notifications";
import { useCallback, useState } from "preact/hooks";
import { query, type NotificationFailure, type Page, type ReplayResult } from "../api";
import { Choice, Id, ListTable, Outcome, ScreenLayout, submit, time, useApi, useLoadOnMount, usePagedList, useRowOutcomes } from "../ui";

const STATUSES = ["", ...FAILURE_STATUSES] as const;
const CHANNEL_FILTERS = ["", ...CHANNELS] as const;
type Status = (typeof STATUSES)[number];
type ChannelFilter = (typeof CHANNEL_FILTERS)[number];
const COLUMNS = ["Notification", "Recipient", "Channel", "Status", "Attempts", "Last error", "Category", "Source event", "Updated", "Action"];

export function Notifications() {
  const { request } = useApi();
  const [status, setStatus] = useState<Status>("");
  const [channel, setChannel] = useState<ChannelFilter>("");
  const fetchPage = useCallback(
    (cursor: string | null) =>
      request<Page<NotificationFailure>>("GET", `/v1/admin/notifications/failures${query({ status, channel, cursor })}`),
    [request, status, channel],
  );
  const list = usePagedList(fetchPage);
  useLoadOnMount(list.load);
  const { outcomes, run } = useRowOutcomes();

  // Refusals are not hidden behind a disabled button: the API's reason (status, permanent, superseded) is what the operator needs to see.
  const replay = (n: NotificationFailure) =>
    run(n.id, async () => {
      const result = await request<ReplayResult>("POST", `/v1/admin/notifications/${n.id}/replay`);
      list.setItems((items) => items.map((i) => (i.id === n.id ? { ...i, status: result.status as NotificationFailure["status"] } : i)));
      return `replayed: ${result.previousStatus} → ${result.status}`;
    });

  return (
    <ScreenLayout
      title="Notification failures"
      description="Failed and dead-lettered notifications, most recently updated first. A replay queues the delivery again; permanent failures need a configured delivery provider, not a resend."
    >
      <form class="filters" onSubmit={submit(list.load)}>
        <Choice<Status> label="Status" options={STATUSES} value={status} anyLabel="failed and dead_letter" onChange={setStatus} />
        <Choice<ChannelFilter> label="Channel" options={CHANNEL_FILTERS} value={channel} anyLabel="any" onChange={setChannel} />
        <button type="submit">Refresh</button>
      </form>
      <ListTable list={list} columns={COLUMNS} noun="notification" empty="No failed notifications match.">
        {list.items.map((n) => (
            <tr key={n.id} data-id={n.id}>
              <td>
                <Id value={n.id} />
              </td>
              <td>{n.recipientActorId}</td>
              <td>{n.channel}</td>
              <td>
                <span class={`badge ${n.status}`}>{n.status}</span>
              </td>
              <td class="count">{n.attempts}</td>
              <td class="error-text">{n.lastError ?? <span class="muted">—</span>}</td>
              <td>
                <span class={`badge ${n.reasonCategory}`}>{n.reasonCategory}</span>
              </td>
              <td>
                <Id value={n.sourceEventId} />
              </td>
              <td>{time(n.updatedAt)}</td>
              <td class="actions">
                <button type="button" disabled={outcomes[n.id]?.busy === true} onClick={() => void replay(n)}>
                  Replay
                </button>
                <Outcome outcome={outcomes[n.id]} />
              </td>
            </tr>
        ))}
      </ListTable>
    </ScreenLayout>
  );
}
