import { useEffect, useState } from "preact/hooks";
import { call, photoPath, type Match, type Page, type PublicReport, type ReportKind, type Sighting } from "../api";
import { Field, onSubmit, ProblemNote, useProblem } from "../forms";
import { fill, useI18n } from "../i18n";
import { MapView, type MapArea } from "../map";
import { useSession } from "../session";

/**
 * One of the person's reports: its photos, its matches best first (with
 * reasons and the other side's photos) to confirm or dismiss, and its
 * sightings on a map. Everything about the other side is its public view.
 */
export function ReportDetail(props: { kind: ReportKind; id: string }) {
  const { m, date } = useI18n();
  const session = useSession()!;
  const [report, setReport] = useState<PublicReport | null>(null);
  const [matches, setMatches] = useState<Match[] | null>(null);
  const [targets, setTargets] = useState<Record<string, PublicReport | null>>({});
  const [sightings, setSightings] = useState<Sighting[] | null>(null);
  const page = useProblem();
  const decision = useProblem();

  useEffect(() => {
    void page.run(async () => {
      const [own, found] = await Promise.all([
        session.request<PublicReport>("GET", `/v1/safety/${props.kind}-reports/${props.id}`),
        session.request<Page<Match>>("GET", `/v1/safety/${props.kind}-reports/${props.id}/matches?limit=50`),
      ]);
      setReport(own);
      setMatches(found.items);
      if (props.kind === "lost") setSightings((await session.request<Page<Sighting>>("GET", `/v1/safety/lost-reports/${props.id}/sightings?limit=100`)).items);
      // The other side's public view, for its photos: found reports for an owner, lost reports for a finder.
      const others = found.items.filter((match) => match.kind !== "sighting");
      const views = await Promise.all(
        others.map((match) =>
          call<PublicReport>(null, "GET", `/v1/safety/${match.kind === "found_report" ? "found" : "lost"}-reports/${match.targetId}`).catch(() => null),
        ),
      );
      setTargets(Object.fromEntries(others.map((match, index) => [match.targetId, views[index] ?? null])));
    });
  }, [props.kind, props.id]);

  const decide = (match: Match, verdict: "confirm" | "dismiss") =>
    decision.run(async () => {
      const updated = await session.request<Match>("POST", `/v1/safety/matches/${match.id}/${verdict}`);
      setMatches((all) => all?.map((item) => (item.id === match.id ? { ...item, status: updated.status } : item)) ?? null);
    });

  const sightingAreas: MapArea[] = (sightings ?? []).map((s) => ({
    id: s.id,
    lat: s.location.lat,
    lon: s.location.lon,
    radiusM: s.location.precisionMeters / 2,
    label: fill(m.report.seenAt, { date: date(s.seenAt) }),
    tone: "sighting",
  }));
  const ownArea: MapArea[] = report
    ? [{ id: report.id, lat: report.location.lat, lon: report.location.lon, radiusM: report.location.precisionMeters / 2, label: m.kind[props.kind], tone: "own" }]
    : [];

  return (
    <section aria-labelledby="report-heading">
      <a href="#/reports">{m.reports.heading}</a>
      <h1 id="report-heading">
        {m.kind[props.kind]}: {report ? m.species[report.animal.species] : ""}
        {report?.animal.name && <> · {report.animal.name}</>}
      </h1>
      {page.problem && <ProblemNote problem={page.problem} />}
      {!report && !page.problem && <p role="status">{m.common.loading}</p>}
      {report && (
        <>
          <h2>{m.report.photos}</h2>
          {report.photos.length === 0 ? (
            <p class="muted">{m.report.noPhotos}</p>
          ) : (
            <ul class="photos">
              {report.photos.map((photo) => (
                <li key={photo.id}>
                  <img src={photoPath(photo.id, "thumb")} alt={m.species[report.animal.species]} width={160} height={Math.round((160 * photo.height) / Math.max(photo.width, 1))} />
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      {matches && (
        <section aria-labelledby="matches-heading">
          <h2 id="matches-heading">{m.report.matchesHeading}</h2>
          {matches.length === 0 ? (
            <p>{m.report.noMatches}</p>
          ) : (
            <>
              {props.kind === "lost" && <p class="muted">{m.report.matchesIntro}</p>}
              {decision.problem && <ProblemNote problem={decision.problem} />}
              <ol class="cards matches">
                {matches.map((match) => (
                  <MatchCard key={match.id} match={match} target={targets[match.targetId] ?? null} owner={props.kind === "lost"} busy={decision.busy} onDecide={decide} />
                ))}
              </ol>
            </>
          )}
        </section>
      )}
      {props.kind === "lost" && sightings && (
        <section aria-labelledby="sightings-heading">
          <h2 id="sightings-heading">{m.report.sightingsHeading}</h2>
          <MapView label={m.report.sightingsHeading} areas={[...ownArea, ...sightingAreas]} center={report ? { lat: report.location.lat, lon: report.location.lon } : undefined} zoom={13} />
          {sightings.length === 0 ? (
            <p>{m.report.noSightings}</p>
          ) : (
            <ul class="cards">
              {sightings.map((s) => (
                <li key={s.id} class="card" data-id={s.id}>
                  {fill(m.report.seenAt, { date: date(s.seenAt) })}
                  {s.note && <p>{s.note}</p>}
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
    </section>
  );
}

function MatchCard(props: { match: Match; target: PublicReport | null; owner: boolean; busy: boolean; onDecide(match: Match, verdict: "confirm" | "dismiss"): void }) {
  const { m } = useI18n();
  const { match, target } = props;
  const kindLabel = match.kind === "found_report" ? m.report.foundReport : match.kind === "sighting" ? m.report.sighting : m.report.lostReport;
  const animal = target?.animal ?? match.lostReport?.animal;
  return (
    <li class={`card match ${match.status}`} data-id={match.id}>
      <h3>
        {kindLabel}
        {animal && <> · {m.species[animal.species]}</>} · <span class="score">{fill(m.report.score, { percent: Math.round(match.score * 100) })}</span>
      </h3>
      <p>
        <span class={`status ${match.status}`}>{m.report.matchStatus[match.status]}</span> · {fill(m.common.kmAway, { km: match.distanceKm.toFixed(1) })}
      </p>
      <p>
        {m.report.reasons}:{" "}
        {match.reasons.map((reason) => (
          <span key={reason} class="chip">
            {m.reason[reason] ?? reason}
          </span>
        ))}
      </p>
      {animal && (animal.breed || animal.colors.length > 0) && <p class="muted">{[animal.breed, animal.colors.join(", ")].filter(Boolean).join(" · ")}</p>}
      {target && target.photos.length > 0 && (
        <ul class="photos">
          {target.photos.map((photo) => (
            <li key={photo.id}>
              <img src={photoPath(photo.id, "thumb")} alt={`${kindLabel}: ${m.species[target.animal.species]}`} width={120} height={Math.round((120 * photo.height) / Math.max(photo.width, 1))} />
            </li>
          ))}
        </ul>
      )}
      {props.owner && match.status === "suggested" && (
        <div class="actions">
          <button type="button" class="primary" disabled={props.busy} onClick={() => props.onDecide(match, "confirm")}>
            {m.report.confirm}
          </button>
          <button type="button" class="secondary" disabled={props.busy} onClick={() => props.onDecide(match, "dismiss")}>
            {m.report.dismiss}
          </button>
        </div>
      )}
      {match.kind !== "sighting" && match.status !== "dismissed" && target?.status !== "resolved" && (
        <RelayForm targetKind={match.kind === "found_report" ? "found" : "lost"} targetId={match.targetId} label={match.kind === "found_report" ? m.report.messageFinder : m.report.messageOwner} />
      )}
    </li>
  );
}

/** A message to the other side through the service's relay: neither side's contact is shown to the other unless they write it. */
function RelayForm(props: { targetKind: ReportKind; targetId: string; label: string }) {
  const { m } = useI18n();
  const [open, setOpen] = useState(false);
  const [message, setMessage] = useState("");
  const [contact, setContact] = useState("");
  const [sent, setSent] = useState(false);
  const form = useProblem();
  if (sent) return <p role="status">{m.report.sent}</p>;
  if (!open)
    return (
      <button type="button" class="link" onClick={() => setOpen(true)}>
        {props.label}
      </button>
    );
  return (
    <form
      class="relay"
      aria-label={props.label}
      onSubmit={onSubmit(() =>
        form.run(async () => {
          await call(null, "POST", `/v1/safety/${props.targetKind}-reports/${props.targetId}/relay-message`, { message, fromContact: contact });
          setSent(true);
        }),
      )}
    >
      <Field label={m.report.yourMessage} error={form.fieldError("message")}>
        {(attrs) => <textarea {...attrs} rows={3} value={message} onInput={(e) => setMessage(e.currentTarget.value)} />}
      </Field>
      <Field label={m.report.yourContact} error={form.fieldError("fromContact")}>
        {(attrs) => <input {...attrs} value={contact} onInput={(e) => setContact(e.currentTarget.value)} />}
      </Field>
      {form.problem && <ProblemNote problem={form.problem} fieldsShown />}
      <button type="submit" disabled={form.busy}>
        {m.report.send}
      </button>
    </form>
  );
}
