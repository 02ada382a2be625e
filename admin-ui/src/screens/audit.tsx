import { useCallback, useState } from "preact/hooks";
import { query, type AuditEvent, type Page } from "../api";
import { fromLocalInput, Json, ListTable, ScreenLayout, submit, time, useApi, useLoadOnMount, usePagedList } from "../ui";

interface Filters {
  actorId: string;
  action: string;
  objectType: string;
  objectId: string;
  from: string;
  to: string;
}

const NO_FILTERS: Filters = { actorId: "", action: "", objectType: "", objectId: "", from: "", to: "" };

const TEXT_FILTERS = [
  ["actorId", "Actor id", "admin-1"],
  ["action", "Action", "admin.outbox.requeued"],
  ["objectType", "Object type", "outbox_event"],
  ["objectId", "Object id", ""],
] as const;

const COLUMNS = ["Occurred", "Actor", "Action", "Object", "Metadata"];

export function Audit() {
  const { request } = useApi();
  const [form, setForm] = useState<Filters>(NO_FILTERS);
  // The search runs on submit, not on every keystroke.
  const [applied, setApplied] = useState<Filters>(NO_FILTERS);
  const fetchPage = useCallback(
    (cursor: string | null) =>
      request<Page<AuditEvent>>(
        "GET",
        `/v1/admin/audit-events${query({
          actorId: applied.actorId.trim(),
          action: applied.action.trim(),
          objectType: applied.objectType.trim(),
          objectId: applied.objectId.trim(),
          from: fromLocalInput(applied.from),
          to: fromLocalInput(applied.to),
          cursor,
        })}`,
      ),
    [request, applied],
  );
  const list = usePagedList(fetchPage);
  useLoadOnMount(list.load);
  const set = (key: keyof Filters) => (e: Event) => setForm((f) => ({ ...f, [key]: (e.currentTarget as HTMLInputElement).value }));

  return (
    <ScreenLayout title="Audit log" description="Every admin mutation and sensitive read, newest first. The log is append-only.">
      <form class="filters" onSubmit={submit(() => (form === applied ? list.load() : setApplied(form)))}>
        {TEXT_FILTERS.map(([key, label, placeholder]) => (
          <label key={key}>
            {label}
            <input value={form[key]} placeholder={placeholder} onInput={set(key)} />
          </label>
        ))}
        <label>
          From
          <input type="datetime-local" value={form.from} onInput={set("from")} />
        </label>
        <label>
          To
          <input type="datetime-local" value={form.to} onInput={set("to")} />
        </label>
        <button type="submit">Search</button>
        <button type="button" class="secondary" onClick={() => {
            setForm(NO_FILTERS);
            setApplied(NO_FILTERS);
          }}>
          Clear
        </button>
      </form>
      <ListTable list={list} columns={COLUMNS} noun="event" empty="No audit events match.">
        {list.items.map((event) => (
            <tr key={event.id} data-id={event.id}>
              <td>{time(event.occurredAt)}</td>
              <td>{event.actorId}</td>
              <td>
                <code>{event.action}</code>
              </td>
              <td>
                {event.objectType} <code class="id">{event.objectId}</code>
              </td>
              <td>
                <Json value={event.metadata} />
              </td>
            </tr>
        ))}
      </ListTable>
    </ScreenLayout>
  );
}
