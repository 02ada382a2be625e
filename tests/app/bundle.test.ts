import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { appBundleDir, appContentSecurityPolicy, tileOrigin } from "../../api/people-app/routes.js";
import { ensureAppBundle } from "./support.js";

/**
 * The app's built assets as a phone first loads them: the page's scripts,
 * module preloads and stylesheets, gzip-compressed, within 150 KB. Its
 * manifest makes it installable.
 */
const FIRST_LOAD_BUDGET = 150 * 1024;
const dist = appBundleDir();

beforeAll(async () => {
  await ensureAppBundle();
});

describe("the app's bundle", () => {
  it("loads at most 150 KB of gzip-compressed JavaScript and CSS at first", () => {
    const html = readFileSync(join(dist, "index.html"), "utf8");
    const assets = [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*\shref)="\/app\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
    expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
    const sizes = Object.fromEntries(assets.map((asset) => [asset, gzipSync(readFileSync(join(dist, asset)), { level: 9 }).length]));
    const total = Object.values(sizes).reduce((a, b) => a + b, 0);
    expect(total, JSON.stringify(sizes)).toBeLessThanOrEqual(FIRST_LOAD_BUDGET);
  });

  it("has a manifest that installs it standalone from /app/ with 192 and 512 px icons", () => {
    const manifest = JSON.parse(readFileSync(join(dist, "manifest.webmanifest"), "utf8"));
    expect(manifest).toMatchObject({ start_url: "/app/", scope: "/app/", display: "standalone" });
    const sizes = manifest.icons.map((icon: { sizes: string }) => icon.sizes);
    expect(sizes).toEqual(expect.arrayContaining(["192x192", "512x512"]));
    for (const icon of manifest.icons) expect(readFileSync(join(dist, icon.src.replace("/app/", ""))).length).toBeGreaterThan(0);
  });
});

describe("the app's content security policy", () => {
  it("adds the tile server's origin for images and nothing else but the identity provider for its token requests", () => {
    const policy = appContentSecurityPolicy(tileOrigin("https://tiles.example.org/{z}/{x}/{y}.png"), "https://id.example.org");
    const directives = Object.fromEntries(policy.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1)]));
    expect(directives["default-src"]).toEqual(["'self'"]);
    expect(directives["script-src"]).toEqual(["'self'"]);
    expect(directives["style-src"]).toEqual(["'self'"]);
    expect(directives["img-src"]).toEqual(["'self'", "data:", "blob:", "https://tiles.example.org"]);
    expect(directives["connect-src"]).toEqual(["'self'", "https://id.example.org"]);
    expect(directives["frame-ancestors"]).toEqual(["'none'"]);
    expect(policy).not.toContain("unsafe");
  });

  it("names a {s} tile template's subdomains by one wildcard", () => {
    expect(tileOrigin("https://{s}.tile.example.org/{z}/{x}/{y}.png")).toBe("https://*.tile.example.org");
    expect(tileOrigin("http://127.0.0.1:9000/{z}/{x}/{y}.png")).toBe("http://127.0.0.1:9000");
  });
});
