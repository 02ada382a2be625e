import { readdirSync, readFileSync } from "node:fs";
import { round } from "./stats.js";

/** CPU use of the bench's processes, from /proc (Linux). */

const TICK = 100; // /proc CPU times are in clock ticks of 1/100 s on Linux

function cpuTicks(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return Number(fields[11]) + Number(fields[12]); // utime + stime
  } catch {
    return 0;
  }
}

/** Backends of this database: their command line names it (`postgres: user db addr state`). */
export function postgresBackends(database: string): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/cmdline`, "utf8").includes(` ${database} `);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** CPU seconds per second used by each named process group while `run` runs. */
export async function withCpu<T>(groups: () => Record<string, number[]>, run: () => Promise<T>): Promise<{ result: T; cpu: Record<string, number> }> {
  const before = new Map<number, number>();
  for (const pids of Object.values(groups())) for (const pid of pids) before.set(pid, cpuTicks(pid));
  const started = performance.now();
  const result = await run();
  const seconds = (performance.now() - started) / 1000;
  const cpu: Record<string, number> = {};
  for (const [name, pids] of Object.entries(groups())) {
    cpu[name] = round(pids.reduce((t, pid) => t + cpuTicks(pid) - (before.get(pid) ?? cpuTicks(pid)), 0) / TICK / seconds, 2);
  }
  return { result, cpu };
}
