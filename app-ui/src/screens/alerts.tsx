import { useEffect, useState } from "preact/hooks";
import { ApiError, SPECIES, type AlertSubscription, type Point, type Species } from "../api";
import { Field, onSubmit, ProblemNote, useProblem } from "../forms";
import { fill, useI18n } from "../i18n";
import { currentPosition, MapView, type MapArea } from "../map";
import { useSession } from "../session";

/** Alert subscriptions drawn as circles: tap the centre, set the radius, add; delete from the list. */
export function Alerts() {
  const { m } = useI18n();
  const session = useSession()!;
  const [subscriptions, setSubscriptions] = useState<AlertSubscription[] | null>(null);
  const [centre, setCentre] = useState<Point | null>(null);
  const [view, setView] = useState<Point | undefined>(undefined);
  const [radiusKm, setRadiusKm] = useState("2");
  const [species, setSpecies] = useState<Species[]>([]);
  const list = useProblem();
  const form = useProblem();

  const load = () => list.run(async () => setSubscriptions((await session.request<{ items: AlertSubscription[] }>("GET", "/v1/me/alert-subscriptions")).items));
  useEffect(() => {
    void load();
  }, []);
  useEffect(() => {
    // Start where the person's circles are.
    const first = subscriptions?.[0];
    if (first && !view) setView(first.location);
  }, [subscriptions]);

  const add = () =>
    form.run(async () => {
      if (!centre) throw new ApiError({ type: "", title: "", status: 400, detail: m.file.needPoint, errors: [{ path: "body.location", message: m.file.needPoint }] });
      await session.request("POST", "/v1/me/alert-subscriptions", {
        location: centre,
        radiusKm: Number(radiusKm),
        ...(species.length ? { species } : {}),
      });
      setCentre(null);
      await load();
    });

  const remove = (subscription: AlertSubscription) =>
    list.run(async () => {
      await session.request("DELETE", `/v1/me/alert-subscriptions/${subscription.id}`);
      setSubscriptions((all) => all?.filter((s) => s.id !== subscription.id) ?? null);
    });

  const radius = Number(radiusKm);
  const areas: MapArea[] = (subscriptions ?? []).map((s) => ({
    id: s.id,
    lat: s.location.lat,
    lon: s.location.lon,
    radiusM: s.radiusKm * 1000,
    label: fill(m.alerts.item, { km: s.radiusKm, lat: s.location.lat.toFixed(3), lon: s.location.lon.toFixed(3) }),
    tone: "alert",
  }));

  return (
    <section aria-labelledby="alerts-heading">
      <h1 id="alerts-heading">{m.alerts.heading}</h1>
      <p class="muted">{m.alerts.intro}</p>
      <MapView
        label={m.common.mapLabel}
        areas={areas}
        pick={centre}
        onPick={setCentre}
        draftRadiusM={Number.isFinite(radius) && radius > 0 ? radius * 1000 : undefined}
        center={view}
        zoom={11}
      />
      <button
        type="button"
        class="secondary"
        onClick={() =>
          currentPosition().then(
            (here) => {
              setCentre(here);
              setView(here);
            },
            () => undefined,
          )
        }
      >
        {m.common.useLocation}
      </button>
      <form onSubmit={onSubmit(add)} aria-label={m.alerts.add} noValidate>
        {form.fieldError("location") && (
          <p class="field-error" role="alert">
            {form.fieldError("location")}
          </p>
        )}
        <Field label={m.alerts.radius} error={form.fieldError("radiusKm")}>
          {(attrs) => <input {...attrs} type="number" inputMode="decimal" min="0.5" max="50" step="0.5" value={radiusKm} onInput={(e) => setRadiusKm(e.currentTarget.value)} />}
        </Field>
        <fieldset>
          <legend>{m.alerts.species}</legend>
          {SPECIES.map((s) => (
            <label class="choice" key={s}>
              <input
                type="checkbox"
                checked={species.includes(s)}
                onChange={(e) => setSpecies((all) => (e.currentTarget.checked ? [...all, s] : all.filter((x) => x !== s)))}
              />{" "}
              {m.species[s]}
            </label>
          ))}
        </fieldset>
        {form.problem && <ProblemNote problem={form.problem} fieldsShown />}
        <button type="submit" class="primary" disabled={form.busy}>
          {m.alerts.add}
        </button>
        <p class="muted">{m.alerts.limit}</p>
      </form>
      {list.problem && <ProblemNote problem={list.problem} />}
      {subscriptions && subscriptions.length === 0 && <p>{m.alerts.none}</p>}
      <ul class="cards">
        {subscriptions?.map((s) => (
          <li key={s.id} class="card subscription" data-id={s.id}>
            <span>
              {fill(m.alerts.item, { km: s.radiusKm, lat: s.location.lat.toFixed(3), lon: s.location.lon.toFixed(3) })} ·{" "}
              {s.species ? s.species.map((x) => m.species[x]).join(", ") : m.alerts.allSpecies}
            </span>
            <button type="button" class="secondary" onClick={() => remove(s)}>
              {m.common.delete}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
