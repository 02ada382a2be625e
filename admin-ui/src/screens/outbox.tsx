import { useCallback, useState } from "preact/hooks";
import { ApiError, query, REQUEUE_CAP, type Page, type RequeueResult, type StuckEvent } from "../api";
import { age, Id, Json, ListTable, Outcome, ScreenLayout, submit, time, useApi, useLoadOnMount, usePagedList, useRowOutcomes } from "../ui";

const COLUMNS = ["Event", "Type", "Occurred", "Age", "Requeues", "Payload (masked)", "Action"];

export function Outbox() {
  const { request } = useApi();
  const [olderThanInput, setOlderThanInput] = useState("5m");
  const [olderThan, setOlderThan] = useState("5m");
  const fetchPage = useCallback(
    (cursor: string | null) => request<Page<StuckEvent>>("GET", `/v1/admin/outbox/stuck${query({ olderThan, cursor })}`),
    [request, olderThan],
  );
  const list = usePagedList(fetchPage);
  useLoadOnMount(list.load);
  const { outcomes, run } = useRowOutcomes();
  // Rows requeued in this view that the stream acked: they leave the listing on the next refresh.
  const [published, setPublished] = useState<Record<string, boolean>>({});

  const setCount = (id: string, requeueCount: number) =>
    list.setItems((items) => items.map((i) => (i.id === id ? { ...i, requeueCount } : i)));

  const requeue = (event: StuckEvent) =>
    run(event.id, async () => {
      try {
        const result = await request<RequeueResult>("POST", `/v1/admin/outbox/${event.id}/requeue`);
        setCount(event.id, result.requeueCount);
        setPublished((p) => ({ ...p, [event.id]: result.published }));
        return result.published
          ? `published (requeue ${result.requeueCount} of ${REQUEUE_CAP})`
          : `not acknowledged by the bus (requeue ${result.requeueCount} of ${REQUEUE_CAP}); it stays unpublished`;
      } catch (err) {
        // Another operator may have used the last requeues since this page loaded.
        if (err instanceof ApiError && err.slug === "requeue-limit-reached") setCount(event.id, REQUEUE_CAP);
        throw err;
      }
    });

  return (
    <ScreenLayout
      title="Stuck outbox events"
      description={`Unpublished outbox rows older than the threshold, oldest first, with sensitive payload fields masked. A requeue re-publishes through the relay's path; each event may be requeued at most ${REQUEUE_CAP} times.`}
    >
      <form
        class="filters"
        onSubmit={submit(() => (olderThanInput === olderThan ? list.load() : setOlderThan(olderThanInput)))}
      >
        <label>
          Older than
          <input value={olderThanInput} size={6} placeholder="5m" title="90s, 5m, 1h or 2d" onInput={(e) => setOlderThanInput(e.currentTarget.value.trim())} />
        </label>
        <button type="submit">Refresh</button>
      </form>
      <ListTable list={list} columns={COLUMNS} noun="event" empty={`No unpublished events older than ${olderThan}.`}>
        {list.items.map((event) => {
            const atCap = event.requeueCount >= REQUEUE_CAP;
            const done = published[event.id] === true;
            return (
              <tr key={event.id} data-id={event.id}>
                <td>
                  <Id value={event.id} />
                </td>
                <td>
                  <code>{event.type}</code>
                </td>
                <td>{time(event.occurredAt)}</td>
                <td>{age(event.ageSeconds)}</td>
                <td class="count" data-testid="requeue-count">
                  <span class={atCap ? "badge removed" : "badge"}>
                    {event.requeueCount} / {REQUEUE_CAP}
                  </span>
                  {event.requeueCount >= 2 && <div class="muted">flagged</div>}
                </td>
                <td>
                  <Json value={event.payload} />
                </td>
                <td class="actions">
                  {done ? (
                    <span class="badge sent">published</span>
                  ) : (
                    <button
                      type="button"
                      disabled={atCap || outcomes[event.id]?.busy === true}
                      title={atCap ? `the cap of ${REQUEUE_CAP} requeues is reached` : undefined}
                      onClick={() => void requeue(event)}
                    >
                      Requeue
                    </button>
                  )}
                  {atCap && !outcomes[event.id] && <div class="muted">cap of {REQUEUE_CAP} reached</div>}
                  <Outcome outcome={outcomes[event.id]} />
                </td>
              </tr>
            );
        })}
      </ListTable>
    </ScreenLayout>
  );
}
