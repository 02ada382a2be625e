import { useEffect, useState } from "preact/hooks";
import { ApiError, fetchImage, type ModerationItem } from "../api";
import { toProblem, useApi } from "../ui";

/**
 * A reported photo's thumbnail in the moderation queue. It is fetched with
 * the operator's credential, so a quarantined or removed photo (404 to the
 * public) still shows here, blurred until the operator reveals it.
 */
export function PhotoTarget({ item }: { item: ModerationItem }) {
  const { session } = useApi();
  const [src, setSrc] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [revealed, setRevealed] = useState(false);
  const hidden = item.contentState !== null;

  useEffect(() => {
    let current = true;
    fetchImage(session.credential, `/v1/photos/${item.targetId}/thumb`).then(
      (url) => current && setSrc(url),
      (err: unknown) => {
        if (!current) return;
        const problem = toProblem(err);
        setFailure(err instanceof ApiError ? `${problem.status} ${err.slug || problem.title}` : problem.detail);
      },
    );
    return () => {
      current = false;
    };
  }, [session.credential, item.targetId]);

  if (failure) return <div class="muted photo-target">photo unavailable ({failure})</div>;
  if (!src) return <div class="muted photo-target">loading photo…</div>;
  const blurred = hidden && !revealed;
  return (
    <div class="photo-target">
      <img
        src={src}
        alt={`Reported photo ${item.targetId}`}
        data-testid="photo-thumb"
        data-blurred={String(blurred)}
        class={blurred ? "blurred" : undefined}
      />
      {hidden && (
        <button type="button" class="link" onClick={() => setRevealed(!revealed)}>
          {revealed ? "Blur" : "Reveal"}
        </button>
      )}
    </div>
  );
}
