import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { JOB_ACTION_FROM, JOB_STATES, jobsApi, type JobAction, type JobsSummary, type JobState, type Problem, type WorkerJob } from "../api";
import { age, Choice, Json, ListTable, Outcome, ProblemNote, ScreenLayout, submit, time, toProblem, useApi, useLoadOnMount, usePagedList, useRowOutcomes } from "../ui";

const COLUMNS = ["Job", "Task", "State", "Attempts", "Run at", "Locked by", "Last error", "Payload (masked)", ""];

const STATE_OPTIONS: ReadonlyArray<JobState | ""> = ["", ...JOB_STATES];

const STATE_BADGE: Record<JobState, string> = { queued: "badge", scheduled: "badge", running: "badge sent", failed: "badge removed" };

const ACTION_TEXT: Record<JobAction, { title: string; button: string; done: string; help: string }> = {
  retry: { title: "Retry", button: "Retry now", done: "retried: it runs now, attempts reset", help: "A failed or scheduled job runs now with its attempts reset." },
  fail: { title: "Fail", button: "Fail for good", done: "failed for good", help: "A queued or scheduled job is marked failed and never runs." },
};

/** The first line of a last error, for the listing; the detail shows all of it. */
function firstLine(text: string | null): string {
  if (!text) return "—";
  const line = text.split("\n", 1)[0]!;
  return line.length > 80 ? `${line.slice(0, 80)}…` : line;
}

function useSummary() {
  const { request } = useApi();
  const [summary, setSummary] = useState<JobsSummary | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const load = useCallback(async () => {
    try {
      setSummary(await jobsApi.summary(request));
      setProblem(null);
    } catch (err) {
      setProblem(toProblem(err));
    }
  }, [request]);
  return { summary, problem, load };
}

export function Jobs() {
  const { request } = useApi();
  const summary = useSummary();
  const [state, setState] = useState<JobState | "">("failed");
  const [task, setTask] = useState("");
  const [selected, setSelected] = useState<WorkerJob | null>(null);
  const fetchPage = useCallback((cursor: string | null) => jobsApi.list(request, { task, state, cursor }), [request, task, state]);
  const list = usePagedList(fetchPage);
  useLoadOnMount(list.load);
  useLoadOnMount(summary.load);

  const show = (nextTask: string, nextState: JobState) => {
    setTask(nextTask);
    setState(nextState);
  };
  const refresh = () => {
    void summary.load();
    void list.load();
  };
  const changed = (job: WorkerJob) => {
    setSelected(job);
    list.setItems((items) => items.map((i) => (i.id === job.id ? job : i)));
    void summary.load();
  };

  const tasks = summary.summary?.tasks ?? [];
  return (
    <ScreenLayout
      title="Jobs"
      description="graphile-worker's jobs by task and state: queued (due, not locked), scheduled (due later), running (locked by a worker), failed (attempts used up). Payloads are masked; a retry or a fail asks for a reason and is audited."
    >
      {summary.problem && <ProblemNote problem={summary.problem} />}
      <table aria-label="Jobs by task">
        <thead>
          <tr>
            <th>Task</th>
            {JOB_STATES.map((s) => (
              <th key={s}>{s[0]!.toUpperCase() + s.slice(1)}</th>
            ))}
            <th>Oldest queued</th>
          </tr>
        </thead>
        <tbody>
          {tasks.map((row) => (
            <tr key={row.task} data-task={row.task}>
              <td>
                <code>{row.task}</code>
              </td>
              {JOB_STATES.map((s) => (
                <td key={s} class="count">
                  {row[s] > 0 ? (
                    <button type="button" class="secondary" aria-label={`${row[s]} ${s} ${row.task} jobs`} onClick={() => show(row.task, s)}>
                      {row[s]}
                    </button>
                  ) : (
                    <span class="muted">0</span>
                  )}
                </td>
              ))}
              <td>{row.queued > 0 ? age(row.oldestQueuedSeconds) : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {summary.summary && tasks.length === 0 && <p class="empty">No job is queued, scheduled, running or failed.</p>}
      {summary.summary && <p class="muted">Counts as of {time(summary.summary.asOf)}</p>}

      <details open={(summary.summary?.cron.length ?? 0) > 0}>
        <summary>Cron items</summary>
        <table aria-label="Cron items">
          <thead>
            <tr>
              <th>Item</th>
              <th>Known since</th>
              <th>Last run</th>
            </tr>
          </thead>
          <tbody>
            {(summary.summary?.cron ?? []).map((item) => (
              <tr key={item.identifier}>
                <td>
                  <code>{item.identifier}</code>
                </td>
                <td>{time(item.knownSince)}</td>
                <td>{item.lastRun ? time(item.lastRun) : <span class="muted">never</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>

      <form class="filters" aria-label="Job filters" onSubmit={submit(refresh)}>
        <Choice<JobState | ""> label="State" options={STATE_OPTIONS} value={state} anyLabel="any state" onChange={setState} />
        <Choice label="Task" options={["", ...tasks.map((t) => t.task).filter((t) => t !== task), ...(task ? [task] : [])]} value={task} anyLabel="any task" onChange={setTask} />
        <button type="submit">Refresh</button>
      </form>
      <ListTable list={list} columns={COLUMNS} noun="job" empty={`No ${state || ""} job${task ? ` of ${task}` : ""}.`}>
        {list.items.map((job) => (
          <tr key={job.id} data-id={job.id} aria-selected={selected?.id === job.id}>
            <td>
              <code>{job.id}</code>
            </td>
            <td>
              <code>{job.task}</code>
            </td>
            <td>
              <span class={STATE_BADGE[job.state]}>{job.state}</span>
            </td>
            <td class="count">
              {job.attempts} / {job.maxAttempts}
            </td>
            <td>{time(job.runAt)}</td>
            <td>{job.lockedBy ?? <span class="muted">—</span>}</td>
            <td class="muted">{firstLine(job.lastError)}</td>
            <td>
              <Json value={job.payload} />
            </td>
            <td class="actions">
              <button type="button" class="secondary" onClick={() => setSelected(job)}>
                Details
              </button>
            </td>
          </tr>
        ))}
      </ListTable>
      {selected && <JobDetail key={selected.id} job={selected} onChanged={changed} onClose={() => setSelected(null)} />}
    </ScreenLayout>
  );
}

function JobDetail(props: { job: WorkerJob; onChanged(job: WorkerJob): void; onClose(): void }) {
  const { request } = useApi();
  const [job, setJob] = useState(props.job);
  const { outcomes, run } = useRowOutcomes();
  // The listing may be minutes old: the detail reads the job again.
  useEffect(() => {
    jobsApi.get(request, props.job.id).then(setJob, () => undefined);
  }, [request, props.job.id]);

  const act = (action: JobAction, reason: string) =>
    run(action, async () => {
      const next = await jobsApi.act(request, job.id, action, reason);
      setJob(next);
      props.onChanged(next);
      return ACTION_TEXT[action].done;
    });

  return (
    <section class="card" aria-label={`Job ${job.id}`}>
      <header class="screen-header">
        <h3>
          Job <code>{job.id}</code> <span class={STATE_BADGE[job.state]}>{job.state}</span>
        </h3>
        <button type="button" class="secondary" onClick={props.onClose}>
          Close
        </button>
      </header>
      <dl class="state" aria-label="Job state">
        <dt>Task</dt>
        <dd>
          <code>{job.task}</code>
        </dd>
        <dt>Attempts</dt>
        <dd>
          {job.attempts} of {job.maxAttempts}
        </dd>
        <dt>Run at</dt>
        <dd>{time(job.runAt)}</dd>
        <dt>Created</dt>
        <dd>{time(job.createdAt)}</dd>
        <dt>Locked</dt>
        <dd>{job.lockedAt ? `${time(job.lockedAt)} by ${job.lockedBy ?? "?"}` : "—"}</dd>
        <dt>Payload (masked)</dt>
        <dd>
          <Json value={job.payload} />
        </dd>
      </dl>
      <h4>Last error</h4>
      {job.lastError ? (
        <pre class="json" aria-label="Last error">
          {job.lastError}
        </pre>
      ) : (
        <p class="muted">No error recorded.</p>
      )}
      <div class="account">
        {(["retry", "fail"] as const).map((action) => (
          <ReasonForm key={action} action={action} job={job} busy={outcomes[action]?.busy === true} onSubmit={(reason) => void act(action, reason)}>
            <Outcome outcome={outcomes[action]} />
          </ReasonForm>
        ))}
      </div>
    </section>
  );
}

function ReasonForm(props: { action: JobAction; job: WorkerJob; busy: boolean; onSubmit(reason: string): void; children: ComponentChildren }) {
  const [reason, setReason] = useState("");
  const text = ACTION_TEXT[props.action];
  const allowed = JOB_ACTION_FROM[props.action].includes(props.job.state);
  return (
    <form class="card" aria-label={`${text.title} job`} onSubmit={submit(() => props.onSubmit(reason))}>
      <h4>{text.title}</h4>
      <p class="muted">{text.help}</p>
      <label>
        Reason
        <textarea value={reason} required maxLength={2000} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
      <button
        type="submit"
        class={props.action === "fail" ? "danger" : undefined}
        disabled={props.busy || !allowed}
        title={allowed ? undefined : `only a ${JOB_ACTION_FROM[props.action].join(" or ")} job`}
      >
        {text.button}
      </button>
      {props.children}
    </form>
  );
}
