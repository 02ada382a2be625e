import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { NETWORK_ERROR, toProblem, type Problem } from "./api";
import { fill, useI18n } from "./i18n";

/**
 * A form's state of the API's answer: the problem+json it got, whose
 * `errors` (paths such as body.animal.species) are shown next to the field
 * of that name (animal.species), and the rest above the form.
 */
export function useProblem() {
  const [problem, setProblem] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  /** The message for a field, by its API path without body./query. */
  const fieldError = (name: string): string | undefined =>
    problem?.errors?.find((e) => e.path.replace(/^(body|querystring|query|params)\./, "") === name)?.message;
  /** Runs a submit: clears the last problem, keeps the new one. */
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setProblem(null);
    try {
      await action();
    } catch (err) {
      setProblem(toProblem(err));
    } finally {
      setBusy(false);
    }
  };
  return { problem, setProblem, fieldError, busy, run };
}

/** The problem in words: its detail, or the network's failure. */
export function ProblemNote(props: { problem: Problem; fieldsShown?: boolean }) {
  const { m } = useI18n();
  const { problem } = props;
  const text = problem.type === NETWORK_ERROR ? m.common.networkError : fill(m.common.error, { detail: problem.detail });
  return (
    <p class="problem" role="alert">
      {props.fieldsShown && problem.errors?.length ? m.common.fieldsNeedAttention : text}
    </p>
  );
}

let nextId = 0;

/** A labelled control with its own error: the control gets id, aria-invalid and aria-describedby. */
export function Field(props: {
  label: string;
  error?: string;
  hint?: string;
  children: (attrs: { id: string; "aria-invalid"?: "true"; "aria-describedby"?: string }) => ComponentChildren;
}) {
  const [id] = useState(() => `field-${++nextId}`);
  const describedBy = [props.hint ? `${id}-hint` : null, props.error ? `${id}-error` : null].filter(Boolean).join(" ");
  return (
    <div class={props.error ? "field invalid" : "field"}>
      <label for={id}>{props.label}</label>
      {props.hint && (
        <p class="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
      {props.children({ id, ...(props.error ? { "aria-invalid": "true" as const } : {}), ...(describedBy ? { "aria-describedby": describedBy } : {}) })}
      {props.error && (
        <p class="field-error" id={`${id}-error`}>
          {props.error}
        </p>
      )}
    </div>
  );
}

/** A submit handler that keeps the page (the forms post through the API, never by navigation). */
export const onSubmit = (action: () => void) => (event: Event) => {
  event.preventDefault();
  action();
};

/** A datetime-local value for now, in the device's time zone. */
export function localNow(): string {
  const now = new Date();
  now.setMinutes(now.getMinutes() - now.getTimezoneOffset());
  return now.toISOString().slice(0, 16);
}

/** A datetime-local value as RFC 3339 (UTC). */
export const toInstant = (local: string): string => (local ? new Date(local).toISOString() : "");
