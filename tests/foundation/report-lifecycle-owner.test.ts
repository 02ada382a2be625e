import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * One module writes a report's lifecycle: the status, resolved_at,
 * closed_reason, expires_at and expiry_warned_for columns of
 * safety_lost_report and safety_found_report are set in
 * lib/report-lifecycle.ts and nowhere else (docs/decisions/0053). This scans
 * every .ts file git knows (tracked, or new and not ignored) outside tests/
 * and bench/, whose fixtures set these columns directly.
 */
const root = path.resolve(import.meta.dirname, "../..");
const OWNER = "lib/report-lifecycle.ts";
const LIFECYCLE_COLUMNS = /\b(status|resolved_at|closed_reason|expires_at|expiry_warned_for)\s*=/i;
const REPORT_TABLE = /\bsafety_(lost|found)_report\b/i;
/** How a module names a report table in a template: its literal name, or a kind → table map. */
const REPORT_TABLE_MAP = /reportTable|safety_(lost|found)_report/;

function sourceFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.ts"], { cwd: root });
  return [...new Set(out.toString("utf8").split("\0"))].filter(
    (file) => file !== "" && !file.startsWith("tests/") && !file.startsWith("bench/") && !file.endsWith(".d.ts"),
  );
}

/**
 * The lifecycle writes in a file's SQL: an `update <table> [alias] set …`
 * whose set list names a lifecycle column, where the table is a report
 * table by name or an interpolation in a file that names one (the
 * `${reportTable[kind]}` of a store); and an insert into a report table that
 * names `status` itself (a create leaves it to the column default).
 */
function lifecycleWrites(text: string): string[] {
  const writes: string[] = [];
  const update = /\bupdate\s+(\$\{[^}]*\}|[a-z_.]+)(?:\s+(?:as\s+)?[a-z_]+)?\s+set\s+([\s\S]*?)(?=\bwhere\b|\bfrom\b|\breturning\b|`|$)/gi;
  for (const [statement, table, sets] of text.matchAll(update)) {
    const reportTable = table!.startsWith("${") ? REPORT_TABLE_MAP.test(text) : REPORT_TABLE.test(table!);
    if (reportTable && LIFECYCLE_COLUMNS.test(sets!)) writes.push(statement.replace(/\s+/g, " ").slice(0, 120));
  }
  const insert = /\binsert\s+into\s+(\$\{[^}]*\}|[a-z_.]+)\s*\(([^)]*)\)/gi;
  for (const [statement, table, columns] of text.matchAll(insert)) {
    const reportTable = table!.startsWith("${") ? REPORT_TABLE_MAP.test(text) : REPORT_TABLE.test(table!);
    if (reportTable && /\bstatus\b/i.test(columns!)) writes.push(statement.replace(/\s+/g, " ").slice(0, 120));
  }
  return writes;
}

describe("one module owns each report table's lifecycle", () => {
  it(`only ${OWNER} writes status, resolved_at, closed_reason, expires_at or expiry_warned_for of a report table`, () => {
    const elsewhere: string[] = [];
    for (const file of sourceFiles()) {
      if (file === OWNER) continue;
      let text: string;
      try {
        text = readFileSync(path.join(root, file), "utf8");
      } catch {
        continue; // listed by git but gone from the work tree
      }
      for (const write of lifecycleWrites(text)) elsewhere.push(`${file}: ${write}`);
    }
    expect(elsewhere).toEqual([]);
  });

  it("the scan finds the owner's own writes: resolve, cancel, renew, date, expire and remind", () => {
    const writes = lifecycleWrites(readFileSync(path.join(root, OWNER), "utf8"));
    expect(writes).toHaveLength(6);
  });

  it("the scan recognises the shapes a second writer would take", () => {
    expect(lifecycleWrites("`update safety_lost_report set status = 'cancelled' where id = $1`")).toHaveLength(1);
    expect(lifecycleWrites("reportTable; `update ${reportTable[kind]} r set resolved_at = now(), status = $2 where id = $1`")).toHaveLength(1);
    expect(lifecycleWrites("`update safety_found_report set expires_at = now() from x`")).toHaveLength(1);
    expect(lifecycleWrites("`insert into safety_lost_report (id, status) values ($1, 'open')`")).toHaveLength(1);
    // Not lifecycle writes: the flag slot, another table's status, a create leaving status to its default.
    expect(lifecycleWrites("`update safety_lost_report set flagged = true, updated_at = now() where id = $1`")).toEqual([]);
    expect(lifecycleWrites("`update photo set status = 'ready' where id = $1`")).toEqual([]);
    expect(lifecycleWrites("`insert into safety_lost_report (id, reporter_id, expires_at) select $1, $2, now()`")).toEqual([]);
  });
});
