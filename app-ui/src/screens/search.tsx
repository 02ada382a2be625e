import { useState } from "preact/hooks";
import { ApiError, call, query, SPECIES, type Alert, type Page, type Point, type Shelter } from "../api";
import { Field, onSubmit, ProblemNote, useProblem } from "../forms";
import { fill, useI18n } from "../i18n";
import { currentPosition, MapView, type MapArea } from "../map";

/**
 * Anyone, signed in or not: open lost and found reports near a point (their
 * coarse cells only, as the API gives them), and the shelters near it.
 */
export function Search() {
  const { m } = useI18n();
  const [point, setPoint] = useState<Point | null>(null);
  const [centre, setCentre] = useState<Point | undefined>(undefined);
  const [kind, setKind] = useState<"all" | "lost" | "found">("all");
  const [radiusKm, setRadiusKm] = useState("10");
  const [species, setSpecies] = useState("");
  const [results, setResults] = useState<{ items: Alert[]; km: string } | null>(null);
  // null: the service has no shelter listing (404), so the section is not shown.
  const [shelters, setShelters] = useState<Shelter[] | null>(null);
  const [locating, setLocating] = useState<"idle" | "busy" | "failed">("idle");
  const form = useProblem();

  const search = (at: Point | null) =>
    form.run(async () => {
      if (!at) throw new ApiError({ type: "", title: "", status: 400, detail: m.file.needPoint });
      const where = { lat: at.lat, lon: at.lon, radiusKm };
      const page = await call<Page<Alert>>(null, "GET", `/v1/safety/alerts${query({ ...where, kind, species })}`);
      setResults({ items: page.items, km: radiusKm });
      setShelters(await sheltersNear(at));
    });

  const locate = async () => {
    setLocating("busy");
    try {
      const here = await currentPosition();
      setPoint(here);
      setCentre(here);
      setLocating("idle");
      await search(here);
    } catch {
      setLocating("failed");
    }
  };

  const areas: MapArea[] = (results?.items ?? []).map((item) => ({
    id: item.id,
    lat: item.location.lat,
    lon: item.location.lon,
    radiusM: item.location.precisionMeters / 2,
    label: `${m.kind[item.kind]}: ${m.species[item.species]}${item.animalName ? ` (${item.animalName})` : ""}`,
    tone: item.kind,
  }));

  return (
    <section aria-labelledby="search-heading">
      <h1 id="search-heading">{m.search.heading}</h1>
      <p class="muted">{m.search.intro}</p>
      <MapView label={m.common.mapLabel} pick={point} onPick={setPoint} areas={areas} center={centre} />
      <button type="button" class="secondary" onClick={locate} disabled={locating === "busy"}>
        {locating === "busy" ? m.common.locating : m.common.useLocation}
      </button>
      {locating === "failed" && <p class="warning">{m.common.locationFailed}</p>}
      <form class="filters" onSubmit={onSubmit(() => search(point))} aria-label={m.search.heading}>
        <Field label={m.search.kind} error={form.fieldError("kind")}>
          {(attrs) => (
            <select {...attrs} value={kind} onChange={(e) => setKind(e.currentTarget.value as typeof kind)}>
              <option value="all">{m.search.kindAll}</option>
              <option value="lost">{m.kind.lost}</option>
              <option value="found">{m.kind.found}</option>
            </select>
          )}
        </Field>
        <Field label={m.search.species} error={form.fieldError("species")}>
          {(attrs) => (
            <select {...attrs} value={species} onChange={(e) => setSpecies(e.currentTarget.value)}>
              <option value="">{m.search.anySpecies}</option>
              {SPECIES.map((s) => (
                <option key={s} value={s}>
                  {m.species[s]}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label={m.search.radius} error={form.fieldError("radiusKm")}>
          {(attrs) => <input {...attrs} type="number" inputMode="decimal" min="1" max="100" step="1" value={radiusKm} onInput={(e) => setRadiusKm(e.currentTarget.value)} />}
        </Field>
        {form.problem && <ProblemNote problem={form.problem} fieldsShown />}
        <button type="submit" class="primary" disabled={form.busy}>
          {m.search.submit}
        </button>
      </form>
      {results && (
        <section aria-labelledby="results-heading">
          <h2 id="results-heading">{results.items.length === 1 ? m.search.oneResult : fill(m.search.results, { count: results.items.length })}</h2>
          {results.items.length === 0 ? (
            <p>{fill(m.search.none, { km: results.km })}</p>
          ) : (
            <ul class="cards">
              {results.items.map((item) => (
                <li key={item.id} class="card" data-id={item.id}>
                  <span class={`badge ${item.kind}`}>{m.kind[item.kind]}</span> <strong>{m.species[item.species]}</strong>
                  {item.animalName && <> · {item.animalName}</>}
                  <p class="muted">
                    {fill(m.common.kmAway, { km: item.distanceKm.toFixed(1) })} · {fill(m.common.withinAbout, { m: item.location.precisionMeters })}:{" "}
                    <span class="coords">
                      {item.location.lat.toFixed(3)}, {item.location.lon.toFixed(3)}
                    </span>
                  </p>
                  <a href={`/${item.kind}/${item.id}`}>{m.reports.share}</a>
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
      {shelters && (
        <section aria-labelledby="shelters-heading" data-testid="shelters">
          <h2 id="shelters-heading">{m.search.sheltersHeading}</h2>
          {shelters.length === 0 ? (
            <p>{fill(m.search.noShelters, { km: 25 })}</p>
          ) : (
            <ul class="cards">
              {shelters.map((shelter) => (
                <li key={shelter.id} class="card">
                  <strong>{shelter.name}</strong> · {fill(m.common.kmAway, { km: shelter.distanceKm.toFixed(1) })}
                  <p class="muted">
                    {fill(m.search.inCustody, shelter.inCustody)} · {fill(m.search.holdDays, { days: shelter.strayHoldDays })}
                  </p>
                  <p>
                    {shelter.publicContact.phone && <a href={`tel:${shelter.publicContact.phone}`}>{shelter.publicContact.phone}</a>}{" "}
                    {shelter.publicContact.website && (
                      <a href={shelter.publicContact.website} rel="noopener noreferrer">
                        {shelter.publicContact.website}
                      </a>
                    )}
                  </p>
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
    </section>
  );
}

/** GET /v1/safety/shelters; null where the service has no such listing (404) or it failed. */
async function sheltersNear(at: Point): Promise<Shelter[] | null> {
  try {
    const answer = await call<{ items: Shelter[] } | Shelter[]>(null, "GET", `/v1/safety/shelters${query({ lat: at.lat, lon: at.lon, radiusKm: 25 })}`);
    return Array.isArray(answer) ? answer : answer.items;
  } catch {
    return null;
  }
}
