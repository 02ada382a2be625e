import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Resolver } from "../../lib/safe-fetch.js";

/**
 * Real local peers for the photo fetcher: an HTTPS server with a test
 * certificate (made here with openssl) and a plain HTTP one, each counting
 * the requests it got, and a resolver that maps public-looking names to the
 * addresses a test chooses (the fetcher's injectable DNS lookup).
 */

export const PHOTO_HOST = "photos.shelter.example";

export interface TestCertificate {
  key: string;
  cert: string;
}

let certificate: TestCertificate | null = null;

/** A self-signed certificate for PHOTO_HOST, localhost and 127.0.0.1, made once per test file. */
export function testCertificate(): TestCertificate {
  if (certificate) return certificate;
  const dir = mkdtempSync(path.join(tmpdir(), "ass-test-tls-"));
  const key = path.join(dir, "key.pem");
  const cert = path.join(dir, "cert.pem");
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
      "-subj", `/CN=${PHOTO_HOST}`, "-addext", `subjectAltName=DNS:${PHOTO_HOST},DNS:localhost,IP:127.0.0.1`,
      "-keyout", key, "-out", cert],
    { stdio: "ignore" },
  );
  certificate = { key: readFileSync(key, "utf8"), cert: readFileSync(cert, "utf8") };
  return certificate;
}

export interface TestServer {
  port: number;
  /** Paths requested, in order. */
  requests: string[];
  close(): Promise<void>;
}

type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void;

async function listen(server: http.Server | https.Server, requests: string[]): Promise<TestServer> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function startHttpsServer(handler: Handler): Promise<TestServer> {
  const requests: string[] = [];
  const { key, cert } = testCertificate();
  const server = https.createServer({ key, cert }, (request, response) => {
    requests.push(request.url ?? "");
    handler(request, response);
  });
  return listen(server, requests);
}

export function startHttpServer(handler: Handler): Promise<TestServer> {
  const requests: string[] = [];
  const server = http.createServer((request, response) => {
    requests.push(request.url ?? "");
    handler(request, response);
  });
  return listen(server, requests);
}

/** A resolver that answers only the names it is given, and counts its lookups. */
export function mappedResolver(names: Record<string, string>): Resolver & { lookups: string[] } {
  const lookups: string[] = [];
  const resolve = async (hostname: string) => {
    lookups.push(hostname);
    const address = names[hostname];
    if (!address) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return [{ address, family: address.includes(":") ? (6 as const) : (4 as const) }];
  };
  return Object.assign(resolve, { lookups });
}
