#!/usr/bin/env node
// Pre-release only: recomputes the hash chain of migrations/committed after a
// committed file was edited by hand. Once a migration has shipped, never edit
// it: add a new one with `graphile-migrate commit` instead.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const dir = path.resolve(import.meta.dirname, "../migrations/committed");
let previous = null;
for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
  const text = readFileSync(path.join(dir, file), "utf8");
  const lines = text.split("\n");
  const headers = [];
  while (lines[0]?.startsWith("--! ")) headers.push(lines.shift());
  const body = lines.join("\n").replace(/^\n/, "");
  const hash =
    "sha1:" + createHash("sha1").update(((previous ?? "") + "\n" + body.trim()).trim() + "\n").digest("hex");
  const kept = headers.filter((h) => !h.startsWith("--! Previous:") && !h.startsWith("--! Hash:"));
  const out = [`--! Previous: ${previous ?? "-"}`, `--! Hash: ${hash}`, ...kept, "", body].join("\n");
  writeFileSync(path.join(dir, file), out);
  console.log(`${file} ${hash}`);
  previous = hash;
}
