import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  ConfigError,
  loadApiConfig,
  loadBusToolConfig,
  loadDatabaseToolConfig,
  loadNotifierConfig,
  loadRelayConfig,
  settingsByProcess,
  type Env,
} from "../../lib/config.js";
import { configurationDocsPath, renderConfigurationDocs } from "../../scripts/configuration-docs.js";

const file = readFileSync(configurationDocsPath, "utf8");

/** The rows of a process's table, by setting: the cells after the setting's. */
function rowsOf(title: string): Map<string, string[]> {
  const section = file.split(/^## /m).find((part) => part.startsWith(`${title}\n`));
  expect(section, `docs/configuration.md has no section "## ${title}"`).toBeDefined();
  const rows = new Map<string, string[]>();
  for (const line of section!.split("\n")) {
    const match = /^\| `([A-Z0-9_]+)` \|(.*)\|$/.exec(line);
    if (match) rows.set(match[1]!, match[2]!.split(/(?<!\\)\|/).map((cell) => cell.trim()));
  }
  return rows;
}

describe("docs/configuration.md", () => {
  it("is what `npm run docs:config` renders from the schemas in lib/config.ts", () => {
    expect(file, "docs/configuration.md differs from lib/config.ts: run `npm run docs:config` and commit the file").toBe(
      renderConfigurationDocs(),
    );
  });

  it.each(Object.entries(settingsByProcess))("lists every setting of %s in its own table, once", (_name, process) => {
    const rows = rowsOf(process.title);
    expect([...rows.keys()].sort()).toEqual(Object.keys(process.shape).sort());
  });
});

/** A valid value for each setting some process cannot start without. */
const samples: Env = {
  DATABASE_URL: "postgres://x/y",
  NATS_URL: "nats://127.0.0.1:4222",
  AUTH_JWKS_URL: "https://idp.example/jwks",
  AUTH_ISSUER: "i",
  AUTH_AUDIENCE: "a",
  API_CORS_ORIGINS: "https://app.example",
  OBJECT_STORAGE_ENDPOINT: "http://s3.example",
  OBJECT_STORAGE_BUCKET: "b",
  OBJECT_STORAGE_ACCESS_KEY_ID: "k",
  OBJECT_STORAGE_SECRET_ACCESS_KEY: "s",
  ALERT_UNSUBSCRIBE_SECRET: "a-secret-of-at-least-thirty-two-characters",
  PUBLIC_BASE_URL: "https://share.example",
  VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
  VAPID_PRIVATE_KEY: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
  VAPID_SUBJECT: "mailto:ops@example.org",
};

const loaders: Record<keyof typeof settingsByProcess, (env: Env) => unknown> = {
  api: loadApiConfig,
  relay: loadRelayConfig,
  notifier: loadNotifierConfig,
  databaseTool: loadDatabaseToolConfig,
  busTool: loadBusToolConfig,
};

describe("the file's `required in production` column is what the loaders enforce", () => {
  it.each(Object.keys(loaders) as (keyof typeof loaders)[])("%s: starts in production with just the required settings, and not without any one", (name) => {
    const required = [...rowsOf(settingsByProcess[name].title)]
      .filter(([, cells]) => cells[2] === "always" || cells[2] === "yes")
      .map(([setting]) => setting);
    const env: Env = { API_ENV: "production", ...Object.fromEntries(required.map((setting) => [setting, samples[setting]])) };
    expect(() => loaders[name](env)).not.toThrow();
    for (const setting of required) {
      const { [setting]: _left, ...without } = env;
      const load = () => loaders[name](without);
      expect(load, setting).toThrow(ConfigError);
      expect(load, setting).toThrow(expect.objectContaining({ setting }));
    }
  });
});
