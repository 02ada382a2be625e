import type { Queryable } from "../../lib/db.js";
import { readyPhotos } from "../photos/store.js";

/** Where the tag page's photo slot gets its thumbs: same-origin URLs, the one to show first. */
export type TagPhotoSource = (client: Queryable, animalId: string) => Promise<string[]>;

/**
 * The animal's ready photos that public reads may show (a quarantined or
 * removed one is left out), oldest first, as same-origin thumb URLs: the page
 * loads nothing from another origin, so no absolute base URL here.
 */
export const animalThumbs: TagPhotoSource = async (client, animalId) =>
  (await readyPhotos(client, { animalId })).map((photo) => `/v1/photos/${photo.id}/thumb`);
