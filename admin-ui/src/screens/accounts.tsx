import { useState } from "preact/hooks";
import type { Problem, SuspensionState } from "../api";
import { fromLocalInput, ProblemNote, ScreenLayout, submit, time, toProblem, useApi } from "../ui";

const REASON_CODES = ["spam", "scam", "abuse", "impersonation", "other"];

export function Accounts() {
  const { session, request } = useApi();
  const [userIdInput, setUserIdInput] = useState("");
  const [account, setAccount] = useState<SuspensionState | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const perform = async (action: () => Promise<SuspensionState>, done: string) => {
    setBusy(true);
    setProblem(null);
    setNotice(null);
    try {
      setAccount(await action());
      setNotice(done);
    } catch (err) {
      setProblem(toProblem(err));
    } finally {
      setBusy(false);
    }
  };

  const path = (userId: string) => `/v1/admin/accounts/${encodeURIComponent(userId)}`;
  const lookUp = () => perform(() => request<SuspensionState>("GET", path(userIdInput.trim())), "");

  return (
    <ScreenLayout
      title="Accounts"
      description="A suspended account is refused on every endpoint from its next request. An admin cannot suspend their own account: a second platform_admin must act."
    >
      <form class="filters" onSubmit={submit(lookUp)}>
        <label>
          User id
          <input value={userIdInput} placeholder="the identity provider's sub" required onInput={(e) => setUserIdInput(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy}>
          Look up
        </button>
      </form>
      {problem && <ProblemNote problem={problem} />}
      {notice && (
        <p class="ok" role="status">
          {notice}
        </p>
      )}
      {account && (
        <div class="account">
          <AccountState account={account} />
          {account.status === "active" ? (
            <SuspendForm
              key={account.userId}
              self={account.userId === session.actorId}
              busy={busy}
              onSuspend={(body) => perform(() => request("POST", `${path(account.userId)}/suspend`, body), `${account.userId} is suspended`)}
            />
          ) : (
            <RestoreForm
              key={account.userId}
              busy={busy}
              onRestore={(reason) => perform(() => request("POST", `${path(account.userId)}/restore`, { reason }), `${account.userId} is restored`)}
            />
          )}
        </div>
      )}
    </ScreenLayout>
  );
}

function AccountState({ account }: { account: SuspensionState }) {
  const rows: [string, string | undefined][] =
    account.status === "suspended"
      ? [
          ["Reason code", account.reasonCode],
          ["Reason", account.reasonDetail],
          ["Expires", account.expiresAt ? time(account.expiresAt) : "never (until restored)"],
          ["Suspended by", account.suspendedBy],
          ["Suspended at", time(account.suspendedAt)],
        ]
      : [
          ["Restored by", account.restoredBy],
          ["Restored at", account.restoredAt && time(account.restoredAt)],
          ["Restore reason", account.restoreReason],
        ];
  return (
    <dl class="state" aria-label="Account state">
      <dt>User</dt>
      <dd>
        <code>{account.userId}</code>
      </dd>
      <dt>Status</dt>
      <dd>
        <span class={`badge ${account.status}`}>{account.status}</span>
      </dd>
      {rows
        .filter(([, value]) => value)
        .map(([label, value]) => [<dt key={`${label}-t`}>{label}</dt>, <dd key={`${label}-d`}>{value}</dd>])}
    </dl>
  );
}

function SuspendForm(props: {
  self: boolean;
  busy: boolean;
  onSuspend(body: { reasonCode: string; reasonDetail: string; expiresAt?: string }): unknown;
}) {
  const [reasonCode, setReasonCode] = useState("abuse");
  const [reasonDetail, setReasonDetail] = useState("");
  const [expiresAt, setExpiresAt] = useState("");
  return (
    <form
      class="card"
      aria-label="Suspend account"
      onSubmit={submit(() => props.onSuspend({ reasonCode, reasonDetail, expiresAt: fromLocalInput(expiresAt) }))}
    >
      <h3>Suspend</h3>
      {props.self && <p class="warning">This is your own account. The API refuses self-suspension; ask a second platform_admin.</p>}
      <label>
        Reason code
        <input list="reason-codes" value={reasonCode} required onInput={(e) => setReasonCode(e.currentTarget.value)} />
        <datalist id="reason-codes">
          {REASON_CODES.map((c) => (
            <option key={c} value={c} />
          ))}
        </datalist>
      </label>
      <label>
        Reason detail
        <textarea value={reasonDetail} required maxLength={2000} onInput={(e) => setReasonDetail(e.currentTarget.value)} />
      </label>
      <label>
        Expires at <span class="muted">(empty: until restored)</span>
        <input type="datetime-local" value={expiresAt} onInput={(e) => setExpiresAt(e.currentTarget.value)} />
      </label>
      <button type="submit" class="danger" disabled={props.busy}>
        Suspend
      </button>
    </form>
  );
}

function RestoreForm(props: { busy: boolean; onRestore(reason: string): unknown }) {
  const [reason, setReason] = useState("");
  return (
    <form class="card" aria-label="Restore account" onSubmit={submit(() => props.onRestore(reason))}>
      <h3>Restore</h3>
      <label>
        Reason
        <textarea value={reason} required maxLength={2000} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={props.busy}>
        Restore
      </button>
    </form>
  );
}
