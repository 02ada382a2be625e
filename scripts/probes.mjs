// Is a Postgres or NATS URL usable right now? Each probe answers null when it
// is, else the reason it is not, for the log line that says why the next step runs.
import { connect } from "node:net";
import pg from "pg";

const PROBE_TIMEOUT_MS = 3_000;

/** Connects and runs `select 1`. A missing database still counts: `npm run dev` creates it. */
export async function probePostgres(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  // A server going away mid-probe emits 'error' on the client; the failed query reports it.
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("select 1");
    return null;
  } catch (err) {
    if (err.code === "3D000") return null;
    return err.message || err.code || String(err);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Reads the server's INFO line: a NATS server with JetStream on. */
export function probeNats(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port) || 4222, hostname.replace(/^\[|\]$/g, ""));
    let received = "";
    const done = (reason) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done("no answer"));
    socket.on("error", (err) => done(err.code ?? err.message));
    socket.on("data", (chunk) => {
      received += chunk;
      const end = received.indexOf("\r\n");
      if (end < 0) return;
      const line = received.slice(0, end);
      if (!line.startsWith("INFO ")) return done("not a NATS server");
      try {
        done(JSON.parse(line.slice(5)).jetstream ? null : "JetStream is off");
      } catch {
        done("not a NATS server");
      }
    });
  });
}

/** host:port of a URL, for log lines (never the password). */
export function where(url) {
  const { hostname, port, protocol } = new URL(url);
  return `${hostname}:${port || (protocol === "nats:" ? "4222" : "5432")}`;
}
