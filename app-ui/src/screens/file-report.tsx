import { useState } from "preact/hooks";
import { ApiError, SPECIES, type Point, type ReportKind, type Species } from "../api";
import { Field, localNow, onSubmit, ProblemNote, toInstant, useProblem } from "../forms";
import { fill, useI18n } from "../i18n";
import { currentPosition, MapView } from "../map";
import { useSession } from "../session";

const MAX_PHOTOS = 5;

/** Files a lost or found report (POST /v1/safety/{lost,found}-reports), then uploads its photos one by one. */
export function FileReport() {
  const { m } = useI18n();
  const session = useSession()!;
  const [kind, setKind] = useState<ReportKind>("lost");
  const [species, setSpecies] = useState<Species>("dog");
  const [name, setName] = useState("");
  const [breed, setBreed] = useState("");
  const [colors, setColors] = useState("");
  const [sex, setSex] = useState("unknown");
  const [microchip, setMicrochip] = useState("");
  const [marks, setMarks] = useState("");
  const [when, setWhen] = useState(localNow);
  const [point, setPoint] = useState<Point | null>(null);
  const [centre, setCentre] = useState<Point | undefined>(undefined);
  const [description, setDescription] = useState("");
  const [verification, setVerification] = useState("");
  const [photos, setPhotos] = useState<File[]>([]);
  const [progress, setProgress] = useState<string | null>(null);
  const [photoProblems, setPhotoProblems] = useState<string[]>([]);
  const [locating, setLocating] = useState<"idle" | "busy" | "failed">("idle");
  const form = useProblem();
  const whenField = kind === "lost" ? "lastSeenAt" : "foundAt";

  const locate = async () => {
    setLocating("busy");
    try {
      const here = await currentPosition();
      setPoint(here);
      setCentre(here);
      setLocating("idle");
    } catch {
      setLocating("failed");
    }
  };

  const submit = () =>
    form.run(async () => {
      setPhotoProblems([]);
      if (!point) throw new ApiError({ type: "", title: "", status: 400, detail: m.file.needPoint, errors: [{ path: "body.location", message: m.file.needPoint }] });
      const animal = {
        species,
        ...(kind === "lost" && name.trim() ? { name: name.trim() } : {}),
        ...(breed.trim() ? { breed: breed.trim() } : {}),
        ...(colors.trim() ? { colors: colors.split(",").map((c) => c.trim()).filter(Boolean) } : {}),
        ...(sex !== "unknown" ? { sex } : {}),
        ...(microchip.trim() ? { microchipId: microchip.trim() } : {}),
        ...(marks.trim() ? { distinguishingMarks: marks.trim() } : {}),
      };
      const body = {
        animal,
        [whenField]: toInstant(when),
        location: point,
        ...(description.trim() ? { description: description.trim() } : {}),
        ...(kind === "lost" && verification.trim() ? { verificationDetail: verification.trim() } : {}),
      };
      const created = await session.request<{ id: string }>("POST", `/v1/safety/${kind}-reports`, body);
      const failed: string[] = [];
      for (const [index, file] of photos.entries()) {
        setProgress(fill(m.file.photoUploading, { n: index + 1, total: photos.length }));
        const data = new FormData();
        data.append("photo", file, file.name);
        try {
          await session.request("POST", `/v1/safety/${kind}-reports/${created.id}/photos`, data);
        } catch (err) {
          failed.push(fill(m.file.photoFailed, { name: file.name, detail: err instanceof ApiError ? err.problem.detail : String(err) }));
        }
      }
      setProgress(null);
      // The report stands either way: a refused photo is told here, with the way to the report.
      if (failed.length > 0) return setPhotoProblems([...failed, `#/reports/${kind}/${created.id}`]);
      location.hash = `#/reports/${kind}/${created.id}`;
    });

  return (
    <section aria-labelledby="file-heading">
      <h1 id="file-heading">{m.file.heading}</h1>
      <form class="report-form" onSubmit={onSubmit(submit)} noValidate aria-labelledby="file-heading">
        <fieldset>
          <legend>{m.file.kindLegend}</legend>
          <label class="choice">
            <input type="radio" name="kind" checked={kind === "lost"} onChange={() => setKind("lost")} /> {m.file.lostChoice}
          </label>
          <label class="choice">
            <input type="radio" name="kind" checked={kind === "found"} onChange={() => setKind("found")} /> {m.file.foundChoice}
          </label>
        </fieldset>
        <fieldset>
          <legend>{m.file.animalLegend}</legend>
          <Field label={m.file.species} error={form.fieldError("animal.species")}>
            {(attrs) => (
              <select {...attrs} value={species} onChange={(e) => setSpecies(e.currentTarget.value as Species)}>
                {SPECIES.map((s) => (
                  <option key={s} value={s}>
                    {m.species[s]}
                  </option>
                ))}
              </select>
            )}
          </Field>
          {kind === "lost" && (
            <Field label={m.file.name} error={form.fieldError("animal.name")}>
              {(attrs) => <input {...attrs} value={name} maxLength={100} onInput={(e) => setName(e.currentTarget.value)} />}
            </Field>
          )}
          <Field label={m.file.breed} error={form.fieldError("animal.breed")}>
            {(attrs) => <input {...attrs} value={breed} maxLength={100} onInput={(e) => setBreed(e.currentTarget.value)} />}
          </Field>
          <Field label={m.file.colors} error={form.fieldError("animal.colors") ?? form.fieldError("animal.colors.0")}>
            {(attrs) => <input {...attrs} value={colors} onInput={(e) => setColors(e.currentTarget.value)} />}
          </Field>
          <Field label={m.file.sex} error={form.fieldError("animal.sex")}>
            {(attrs) => (
              <select {...attrs} value={sex} onChange={(e) => setSex(e.currentTarget.value)}>
                <option value="unknown">{m.sex.unknown}</option>
                <option value="male">{m.sex.male}</option>
                <option value="female">{m.sex.female}</option>
              </select>
            )}
          </Field>
          <Field label={m.file.microchip} error={form.fieldError("animal.microchipId")}>
            {(attrs) => <input {...attrs} value={microchip} inputMode="numeric" onInput={(e) => setMicrochip(e.currentTarget.value)} />}
          </Field>
          <Field label={m.file.marks} error={form.fieldError("animal.distinguishingMarks")}>
            {(attrs) => <textarea {...attrs} value={marks} rows={2} onInput={(e) => setMarks(e.currentTarget.value)} />}
          </Field>
        </fieldset>
        <fieldset>
          <legend>{m.file.whereLegend}</legend>
          <Field label={kind === "lost" ? m.file.whenLost : m.file.whenFound} error={form.fieldError(whenField)}>
            {(attrs) => <input {...attrs} type="datetime-local" value={when} max={localNow()} onInput={(e) => setWhen(e.currentTarget.value)} />}
          </Field>
          <p id="where-hint">{kind === "lost" ? m.file.whereLost : m.file.whereFound}</p>
          <MapView label={m.common.mapLabel} pick={point} onPick={setPoint} center={centre} />
          {(form.fieldError("location") ?? form.fieldError("location.lat") ?? form.fieldError("location.lon")) && (
            <p class="field-error" role="alert">
              {form.fieldError("location") ?? form.fieldError("location.lat") ?? form.fieldError("location.lon")}
            </p>
          )}
          <button type="button" class="secondary" onClick={locate} disabled={locating === "busy"}>
            {locating === "busy" ? m.common.locating : m.common.useLocation}
          </button>
          {locating === "failed" && <p class="warning">{m.common.locationFailed}</p>}
        </fieldset>
        <Field label={m.file.description} error={form.fieldError("description")}>
          {(attrs) => <textarea {...attrs} value={description} rows={3} onInput={(e) => setDescription(e.currentTarget.value)} />}
        </Field>
        {kind === "lost" && (
          <Field label={m.file.verification} hint={m.file.verificationHelp} error={form.fieldError("verificationDetail")}>
            {(attrs) => <input {...attrs} value={verification} maxLength={500} onInput={(e) => setVerification(e.currentTarget.value)} />}
          </Field>
        )}
        <Field label={m.file.photos}>
          {(attrs) => (
            <input
              {...attrs}
              type="file"
              accept="image/*"
              multiple
              onChange={(e) => setPhotos(Array.from(e.currentTarget.files ?? []).slice(0, MAX_PHOTOS))}
            />
          )}
        </Field>
        {photos.length > 0 && (
          <ul class="previews">
            {photos.map((file) => (
              <li key={file.name}>{file.name}</li>
            ))}
          </ul>
        )}
        {form.problem && <ProblemNote problem={form.problem} fieldsShown />}
        {photoProblems.map((text) =>
          text.startsWith("#/") ? (
            <a key={text} href={text}>
              {m.reports.open}
            </a>
          ) : (
            <p class="problem" role="alert" key={text}>
              {text}
            </p>
          ),
        )}
        {progress && <p role="status">{progress}</p>}
        <button type="submit" class="primary wide" disabled={form.busy}>
          {form.busy ? m.file.sending : m.file.submit}
        </button>
      </form>
    </section>
  );
}
