import { createContext, type ComponentChildren } from "preact";
import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, call, type Credential, type Page, type Problem } from "./api";

export interface Session {
  credential: Credential;
  /** The actor id the API sees, when it can be known. */
  actorId: string | null;
  signOut(message?: string): void;
}

export const SessionContext = createContext<Session | null>(null);

/** The signed-in session and an API caller bound to it; a 401 signs the operator out. */
export function useApi() {
  const session = useContext(SessionContext);
  if (!session) throw new Error("useApi outside a signed-in session");
  const request = useCallback(
    async <T,>(method: "GET" | "POST" | "PATCH", path: string, body?: unknown): Promise<T> => {
      try {
        return await call<T>(session.credential, method, path, body);
      } catch (err) {
        if (err instanceof ApiError && err.problem.status === 401) session.signOut(err.problem.detail);
        throw err;
      }
    },
    [session],
  );
  return { session, request };
}

export function toProblem(err: unknown): Problem {
  if (err instanceof ApiError) return err.problem;
  return { type: "", title: "Error", status: 0, detail: (err as Error).message };
}

/** A listing with cursor paging: the first page on load() and more pages appended. */
export function usePagedList<T>(fetchPage: (cursor: string | null) => Promise<Page<T>>) {
  const [items, setItems] = useState<T[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  // Only the latest request may write its answer: filters can change while one is in flight.
  const generation = useRef(0);

  const fetchInto = useCallback(
    async (cursor: string | null) => {
      const mine = ++generation.current;
      setLoading(true);
      setProblem(null);
      try {
        const page = await fetchPage(cursor);
        if (mine !== generation.current) return;
        setItems((previous) => (cursor ? [...previous, ...page.items] : page.items));
        setNextCursor(page.nextCursor);
      } catch (err) {
        if (mine === generation.current) setProblem(toProblem(err));
      } finally {
        if (mine === generation.current) setLoading(false);
      }
    },
    [fetchPage],
  );

  const load = useCallback(() => fetchInto(null), [fetchInto]);
  const loadMore = useCallback(() => nextCursor && fetchInto(nextCursor), [fetchInto, nextCursor]);
  return { items, setItems, nextCursor, loading, problem, load, loadMore };
}

/** Loads the first page on mount. */
export function useLoadOnMount(load: () => unknown) {
  useEffect(() => {
    void load();
  }, [load]);
}

/** What the last per-row action did: its outcome text, or the problem that refused it. */
export type RowOutcome = { busy: true } | { busy: false; ok: string } | { busy: false; problem: Problem };

/** Per-row action state, keyed by item id. */
export function useRowOutcomes() {
  const [outcomes, setOutcomes] = useState<Record<string, RowOutcome>>({});
  const run = useCallback(async (id: string, action: () => Promise<string>) => {
    setOutcomes((o) => ({ ...o, [id]: { busy: true } }));
    try {
      const ok = await action();
      setOutcomes((o) => ({ ...o, [id]: { busy: false, ok } }));
    } catch (err) {
      setOutcomes((o) => ({ ...o, [id]: { busy: false, problem: toProblem(err) } }));
    }
  }, []);
  return { outcomes, run };
}

export function ProblemNote({ problem }: { problem: Problem }) {
  const slug = problem.type.split("/").pop();
  return (
    <div class="problem" role="alert">
      <strong>
        {problem.title}
        {problem.status ? ` (${problem.status}${slug ? ` ${slug}` : ""})` : ""}
      </strong>
      {problem.reason && (
        <span class="reason">
          {" "}
          reason: <code>{problem.reason}</code>
        </span>
      )}
      <div class="detail">{problem.detail}</div>
      {problem.errors && problem.errors.length > 0 && (
        <ul>
          {problem.errors.map((e) => (
            <li key={e.path}>
              <code>{e.path}</code>: {e.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Outcome({ outcome }: { outcome: RowOutcome | undefined }) {
  if (!outcome) return null;
  if (outcome.busy) return <span class="muted">working…</span>;
  if ("problem" in outcome) return <ProblemNote problem={outcome.problem} />;
  return (
    <span class="ok" role="status">
      {outcome.ok}
    </span>
  );
}

/** What the listing components read from usePagedList. */
interface ListView {
  items: unknown[];
  nextCursor: string | null;
  loading: boolean;
  problem: Problem | null;
  loadMore(): unknown;
}

export function ListFooter({ list, noun }: { list: ListView; noun: string }) {
  return (
    <div class="list-footer">
      <span class="muted">{list.loading ? "loading…" : `${list.items.length} ${noun}${list.items.length === 1 ? "" : "s"} shown`}</span>
      {list.nextCursor && (
        <button type="button" disabled={list.loading} onClick={() => void list.loadMore()}>
          Load more
        </button>
      )}
    </div>
  );
}

export function Empty({ when, children }: { when: boolean; children: ComponentChildren }) {
  return when ? <p class="empty">{children}</p> : null;
}

/** Timestamps in UTC, to the second: operators compare them with logs. */
export function time(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 19).replace("T", " ")}Z`;
}

export function age(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/** A datetime-local field's value as an ISO timestamp with offset, as the API's Timestamp wants. */
export function fromLocalInput(value: string): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 1)}</pre>;
}

export function Id({ value }: { value: string | null }) {
  if (!value) return <span class="muted">—</span>;
  return (
    <code class="id" title={value}>
      {value.length > 13 ? `${value.slice(0, 8)}…` : value}
    </code>
  );
}

/** A form's submit handler that stays on the page. */
export function submit(action: () => unknown) {
  return (e: Event) => {
    e.preventDefault();
    void action();
  };
}

/** A screen: its heading (the accessible name of the section) and what it shows. */
export function ScreenLayout(props: { title: string; description: ComponentChildren; children: ComponentChildren }) {
  const id = `${props.title.toLowerCase().replaceAll(" ", "-")}-title`;
  return (
    <section aria-labelledby={id}>
      <header class="screen-header">
        <h2 id={id}>{props.title}</h2>
        <p class="muted">{props.description}</p>
      </header>
      {props.children}
    </section>
  );
}

/** A filter drop-down; the empty value means "no filter" and is shown as `anyLabel`. */
export function Choice<T extends string>(props: { label: string; options: readonly T[]; value: T; anyLabel: string; onChange(value: T): void }) {
  return (
    <label>
      {props.label}
      <select value={props.value} onChange={(e) => props.onChange(e.currentTarget.value as T)}>
        {props.options.map((option) => (
          <option key={option} value={option}>
            {option || props.anyLabel}
          </option>
        ))}
      </select>
    </label>
  );
}

/** A listing's table with its load problem, empty state and paging footer; the rows are the children. */
export function ListTable(props: {
  list: ListView;
  columns: string[];
  noun: string;
  empty: string;
  children: ComponentChildren;
}) {
  const { list } = props;
  return (
    <>
      {list.problem && <ProblemNote problem={list.problem} />}
      <table>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th key={c}>{c}</th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
      <Empty when={!list.loading && !list.problem && list.items.length === 0}>{props.empty}</Empty>
      <ListFooter list={list} noun={props.noun} />
    </>
  );
}
