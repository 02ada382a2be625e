import { execFileSync } from "node:child_process";
import { lstatSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Comments, tests and documents say what the code does now and why, citing a
 * measurement's command or an upstream bug, never the round of work or the
 * ticket that changed it. bench/results/ keeps its raw run records as they
 * were written. The pattern is spelled with character classes so that this
 * file does not match it itself.
 */
const root = path.resolve(import.meta.dirname, "../..");
const DIARY = /sessio[n] [0-9]|issu[e] #?[0-9]/i;
const EXEMPT = ["bench/results/"];

/** Every file git tracks, as paths relative to the repository root. */
function trackedFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "-z"], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  return out.toString("utf8").split("\0").filter((file) => file !== "");
}

/** The file's text, or null for what is not a readable text file (gone from the tree, a link, binary). */
function textOf(file: string): string | null {
  const full = path.join(root, file);
  let stat;
  try {
    stat = lstatSync(full);
  } catch {
    return null;
  }
  if (!stat.isFile()) return null;
  const bytes = readFileSync(full);
  if (bytes.includes(0)) return null;
  return bytes.toString("utf8");
}

describe("the project keeps no diary", () => {
  it("no tracked file outside bench/results names a work session or an issue number", () => {
    const hits: string[] = [];
    for (const file of trackedFiles()) {
      if (EXEMPT.some((prefix) => file.startsWith(prefix))) continue;
      const text = textOf(file);
      if (text === null) continue;
      text.split("\n").forEach((line, i) => {
        if (DIARY.test(line)) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 160)}`);
      });
    }
    expect(hits, `rewrite these to say what is so now and why:\n${hits.join("\n")}`).toEqual([]);
  });
});
