import L from "leaflet";
import "leaflet/dist/leaflet.css";
import { useEffect, useRef } from "preact/hooks";
import type { Point } from "./api";
import { fill, useI18n } from "./i18n";
import { readPageConfig } from "./config";

const tiles = readPageConfig().map;

/** Where a map starts with nothing to show: central Europe, zoomed out. */
export const DEFAULT_CENTER: Point = { lat: 50.1, lon: 8.7 };

export interface MapArea {
  id: string;
  lat: number;
  lon: number;
  /** Metres: a coarse point's cell, or an alert circle. */
  radiusM: number;
  label: string;
  tone: "lost" | "found" | "sighting" | "alert" | "shelter" | "own";
}

/**
 * A Leaflet map. Areas are drawn as circles: another person's report is
 * only ever its coarse cell, so no pin claims a precision it does not have.
 * With onPick, a tap (or Enter on the focused map: its centre) chooses a
 * point, shown as a marker, and `draftRadiusM` draws a circle around it.
 */
export function MapView(props: {
  label: string;
  areas?: MapArea[];
  pick?: Point | null;
  onPick?: (point: Point) => void;
  draftRadiusM?: number;
  center?: Point;
  zoom?: number;
}) {
  const { m } = useI18n();
  const element = useRef<HTMLDivElement>(null);
  const map = useRef<L.Map | null>(null);
  const layer = useRef<L.LayerGroup | null>(null);
  const onPick = useRef(props.onPick);
  onPick.current = props.onPick;

  useEffect(() => {
    if (!element.current) return;
    const start = props.pick ?? props.center ?? DEFAULT_CENTER;
    const created = L.map(element.current, { zoomControl: true, attributionControl: true }).setView([start.lat, start.lon], props.zoom ?? 12);
    created.attributionControl.setPrefix(false);
    if (tiles.tileUrl) L.tileLayer(tiles.tileUrl, { attribution: escapeText(tiles.attribution), maxZoom: 19 }).addTo(created);
    created.on("click", (event: L.LeafletMouseEvent) => onPick.current?.({ lat: round(event.latlng.lat), lon: round(event.latlng.lng) }));
    created.getContainer().addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target === created.getContainer() && onPick.current) {
        const centre = created.getCenter();
        onPick.current({ lat: round(centre.lat), lon: round(centre.lng) });
      }
    });
    layer.current = L.layerGroup().addTo(created);
    map.current = created;
    return () => {
      created.remove();
      map.current = null;
    };
  }, []);

  // A new centre (the device's location, a search point) moves the view.
  useEffect(() => {
    if (props.center && map.current) map.current.setView([props.center.lat, props.center.lon], Math.max(map.current.getZoom(), props.zoom ?? 12));
  }, [props.center?.lat, props.center?.lon]);

  useEffect(() => {
    const group = layer.current;
    if (!group) return;
    group.clearLayers();
    for (const area of props.areas ?? []) {
      L.circle([area.lat, area.lon], { radius: area.radiusM, className: `area area-${area.tone}`, weight: 2 })
        .bindTooltip(area.label)
        .addTo(group);
    }
    if (props.pick) {
      L.circleMarker([props.pick.lat, props.pick.lon], { radius: 9, className: "picked", weight: 3 }).addTo(group);
      if (props.draftRadiusM) L.circle([props.pick.lat, props.pick.lon], { radius: props.draftRadiusM, className: "area area-draft", weight: 2 }).addTo(group);
    }
  }, [props.areas, props.pick?.lat, props.pick?.lon, props.draftRadiusM]);

  return (
    <div class="map-block">
      <div ref={element} class="map" role="region" aria-label={props.label} data-testid="map" />
      {props.onPick && (
        <p class="map-status" aria-live="polite">
          {props.pick ? fill(m.common.pointChosen, { lat: props.pick.lat.toFixed(4), lon: props.pick.lon.toFixed(4) }) : m.common.tapMap}
        </p>
      )}
    </div>
  );
}

/** Five decimals: about a metre, more than a tap can mean. */
const round = (value: number) => Math.round(value * 1e5) / 1e5;

// Leaflet puts the attribution in as HTML: the setting is text.
function escapeText(text: string): string {
  const span = document.createElement("span");
  span.textContent = text;
  return span.innerHTML;
}

/** The device's position, when the person allows it. */
export function currentPosition(): Promise<Point> {
  return new Promise((resolve, reject) => {
    if (!("geolocation" in navigator)) return reject(new Error("no geolocation"));
    navigator.geolocation.getCurrentPosition(
      (position) => resolve({ lat: round(position.coords.latitude), lon: round(position.coords.longitude) }),
      reject,
      { enableHighAccuracy: true, timeout: 15_000, maximumAge: 60_000 },
    );
  });
}
