import { useCallback, useState } from "preact/hooks";
import { query, type Page, type Problem } from "../api";
import { Id, ListTable, Outcome, ProblemNote, ScreenLayout, submit, time, toProblem, useApi, useLoadOnMount, usePagedList, useRowOutcomes } from "../ui";

/** Shelter partners (GET/POST /v1/admin/partners): made here, their stray hold changed, their passwords rotated, suspended and restored. */

const KINDS = ["shelter", "rescue", "vet"] as const;
const DATE_FORMATS = ["YYYY-MM-DD", "MM/DD/YYYY", "DD/MM/YYYY", "DD.MM.YYYY"] as const;

interface PublicContact {
  phone?: string;
  email?: string;
  address?: string;
  website?: string;
}

interface Partner {
  id: string;
  actorId: string;
  name: string;
  kind: (typeof KINDS)[number];
  location: { lat: number; lon: number };
  publicContact: PublicContact;
  loginEmail: string;
  dateFormat: (typeof DATE_FORMATS)[number];
  /** Days a stray is held after intake before it may be rehomed. */
  strayHoldDays: number;
  status: "active" | "suspended";
  suspendedAt?: string;
  suspensionReason?: string;
  createdAt: string;
}

interface PartnerPassword {
  id: string;
  password: string;
}

/** The password the API showed once, with the partner it belongs to. */
function PasswordOnce({ shown, onDone }: { shown: { name: string; loginEmail: string; password: string }; onDone(): void }) {
  return (
    <div class="card" role="status" aria-label="New password">
      <h3>Password for {shown.name}</h3>
      <p>
        Give the shelter its login email <code>{shown.loginEmail}</code> and this password. It is shown this once and stored only as a hash.
      </p>
      <p>
        <code class="secret">{shown.password}</code>
      </p>
      <button type="button" onClick={onDone}>
        Done
      </button>
    </div>
  );
}

function CreateForm(props: { busy: boolean; onCreate(body: Record<string, unknown>): unknown }) {
  const [fields, setFields] = useState({ name: "", kind: "shelter", lat: "", lon: "", phone: "", email: "", address: "", website: "", loginEmail: "", dateFormat: "YYYY-MM-DD", strayHoldDays: "5" });
  const set = (key: keyof typeof fields) => (e: { currentTarget: { value: string } }) => setFields((f) => ({ ...f, [key]: e.currentTarget.value }));
  const body = () => {
    const contact = Object.fromEntries(
      (["phone", "email", "address", "website"] as const).filter((k) => fields[k].trim() !== "").map((k) => [k, fields[k].trim()]),
    );
    return {
      name: fields.name,
      kind: fields.kind,
      location: { lat: Number(fields.lat), lon: Number(fields.lon) },
      publicContact: contact,
      loginEmail: fields.loginEmail,
      dateFormat: fields.dateFormat,
      strayHoldDays: Number(fields.strayHoldDays),
    };
  };
  return (
    <form class="card" aria-label="New partner" onSubmit={submit(() => props.onCreate(body()))}>
      <h3>New partner</h3>
      <label>
        Name
        <input value={fields.name} required maxLength={200} onInput={set("name")} />
      </label>
      <label>
        Kind
        <select value={fields.kind} onChange={set("kind")}>
          {KINDS.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
      </label>
      <label>
        Latitude
        <input value={fields.lat} required inputMode="decimal" onInput={set("lat")} />
      </label>
      <label>
        Longitude
        <input value={fields.lon} required inputMode="decimal" onInput={set("lon")} />
      </label>
      <fieldset>
        <legend>Public contact (shown with its animals)</legend>
        <label>
          Phone
          <input value={fields.phone} onInput={set("phone")} />
        </label>
        <label>
          Email <span class="muted">(gets match email)</span>
          <input type="email" value={fields.email} onInput={set("email")} />
        </label>
        <label>
          Address
          <input value={fields.address} onInput={set("address")} />
        </label>
        <label>
          Website
          <input type="url" value={fields.website} onInput={set("website")} />
        </label>
      </fieldset>
      <label>
        Login email
        <input type="email" value={fields.loginEmail} required onInput={set("loginEmail")} />
      </label>
      <label>
        Date format of its software
        <select value={fields.dateFormat} onChange={set("dateFormat")}>
          {DATE_FORMATS.map((f) => (
            <option key={f} value={f}>
              {f}
            </option>
          ))}
        </select>
      </label>
      <label>
        Stray hold (days)
        <input type="number" min={0} max={30} value={fields.strayHoldDays} required onInput={set("strayHoldDays")} />
      </label>
      <button type="submit" disabled={props.busy}>
        Create partner
      </button>
    </form>
  );
}

function RowActions(props: {
  partner: Partner;
  busy: boolean;
  act(path: string, body: unknown, done: string): unknown;
  rotate(): unknown;
  holdFor(days: number): unknown;
}) {
  const [reasonDetail, setReasonDetail] = useState("");
  const [reasonCode, setReasonCode] = useState("abuse");
  const { partner } = props;
  const [holdDays, setHoldDays] = useState(String(partner.strayHoldDays));
  return (
    <div class="actions">
      <form class="inline" aria-label={`Stray hold of ${partner.name}`} noValidate onSubmit={submit(() => props.holdFor(Number(holdDays)))}>
        <input aria-label="Days held" type="number" min={0} max={30} value={holdDays} required onInput={(e) => setHoldDays(e.currentTarget.value)} />
        <button type="submit" disabled={props.busy}>
          Change hold
        </button>
      </form>
      <button type="button" disabled={props.busy} onClick={() => void props.rotate()}>
        Rotate password
      </button>
      {partner.status === "active" ? (
        <form class="inline" aria-label={`Suspend ${partner.name}`} onSubmit={submit(() => props.act("suspend", { reasonCode, reasonDetail }, "suspended"))}>
          <input aria-label="Reason code" value={reasonCode} required onInput={(e) => setReasonCode(e.currentTarget.value)} />
          <input aria-label="Reason" placeholder="why" value={reasonDetail} required maxLength={2000} onInput={(e) => setReasonDetail(e.currentTarget.value)} />
          <button type="submit" class="danger" disabled={props.busy}>
            Suspend
          </button>
        </form>
      ) : (
        <form class="inline" aria-label={`Restore ${partner.name}`} onSubmit={submit(() => props.act("restore", { reason: reasonDetail }, "restored"))}>
          <input aria-label="Reason" placeholder="why" value={reasonDetail} required maxLength={2000} onInput={(e) => setReasonDetail(e.currentTarget.value)} />
          <button type="submit" disabled={props.busy}>
            Restore
          </button>
        </form>
      )}
    </div>
  );
}

export function Partners() {
  const { request } = useApi();
  const [problem, setProblem] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const [shown, setShown] = useState<{ name: string; loginEmail: string; password: string } | null>(null);
  const { outcomes, run } = useRowOutcomes();
  const fetchPage = useCallback(
    (cursor: string | null) => request<Page<Partner>>("GET", `/v1/admin/partners${query({ limit: 50, cursor })}`),
    [request],
  );
  const list = usePagedList(fetchPage);
  useLoadOnMount(list.load);

  const create = async (body: Record<string, unknown>) => {
    setBusy(true);
    setProblem(null);
    try {
      const made = await request<PartnerPassword>("POST", "/v1/admin/partners", body);
      setShown({ name: String(body.name), loginEmail: String(body.loginEmail), password: made.password });
      await list.load();
    } catch (err) {
      setProblem(toProblem(err));
    } finally {
      setBusy(false);
    }
  };

  const replace = (updated: Partner) => list.setItems((items) => items.map((p) => (p.id === updated.id ? updated : p)));

  return (
    <ScreenLayout
      title="Partners"
      description="Shelters, rescues and vets that publish the animals they take in through the partner API (/partners). Each logs in with its login email and a password shown once; a suspended partner's calls are refused."
    >
      {shown && <PasswordOnce shown={shown} onDone={() => setShown(null)} />}
      {problem && <ProblemNote problem={problem} />}
      <CreateForm busy={busy} onCreate={create} />
      <ListTable list={list} columns={["Partner", "Kind", "Login", "Public contact", "Status", "Created", "Actions"]} noun="partner" empty="No partners yet.">
        {list.items.map((p) => (
          <tr key={p.id} data-id={p.id}>
            <td>
              {p.name}
              <br />
              <Id value={p.id} />
            </td>
            <td>{p.kind}</td>
            <td>
              <code>{p.loginEmail}</code>
              <br />
              <span class="muted">dates {p.dateFormat}</span>
              <br />
              <span class="muted">holds strays {p.strayHoldDays} days</span>
            </td>
            <td>{[p.publicContact.phone, p.publicContact.email, p.publicContact.address, p.publicContact.website].filter(Boolean).join(" · ")}</td>
            <td>
              <span class={`badge ${p.status}`}>{p.status}</span>
              {p.suspensionReason && <div class="muted">{p.suspensionReason}</div>}
            </td>
            <td>{time(p.createdAt)}</td>
            <td>
              <RowActions
                partner={p}
                busy={outcomes[p.id]?.busy ?? false}
                rotate={() =>
                  run(p.id, async () => {
                    const made = await request<PartnerPassword>("POST", `/v1/admin/partners/${p.id}/rotate-password`);
                    setShown({ name: p.name, loginEmail: p.loginEmail, password: made.password });
                    return "new password shown above";
                  })
                }
                holdFor={(days) =>
                  run(p.id, async () => {
                    replace(await request<Partner>("PATCH", `/v1/admin/partners/${p.id}`, { strayHoldDays: days }));
                    return `${p.name} now holds strays ${days} days`;
                  })
                }
                act={(path, body, done) =>
                  run(p.id, async () => {
                    replace(await request<Partner>("POST", `/v1/admin/partners/${p.id}/${path}`, body));
                    return `${p.name} is ${done}`;
                  })
                }
              />
              <Outcome outcome={outcomes[p.id]} />
            </td>
          </tr>
        ))}
      </ListTable>
    </ScreenLayout>
  );
}
