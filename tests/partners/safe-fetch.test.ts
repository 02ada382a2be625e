import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FetchRefused, refusedAddress, SAFE_FETCH_MAX_BYTES, SAFE_FETCH_MAX_REDIRECTS, SAFE_FETCH_TIMEOUT_MS, safeFetch } from "../../lib/safe-fetch.js";
import { eventually } from "../helpers/stream.js";
import { TRICKLE_EVERY_MS, trickleBody } from "../helpers/trickle.js";
import { mappedResolver, PHOTO_HOST, startHttpServer, startHttpsServer, testCertificate, type TestServer } from "./servers.js";

/**
 * The photo fetcher's guard against server-side request forgery, each
 * refused case against a real local server that must see no request (or,
 * for size and time, is cut off), and the allow-listed success.
 */

let jpeg: Buffer;
let photos: TestServer; // HTTPS, test certificate
let plain: TestServer; // HTTP
const stalled = new Set<import("node:http").ServerResponse>();
let errorsClosed = 0;

const routes = (request: import("node:http").IncomingMessage, response: import("node:http").ServerResponse) => {
  const url = request.url ?? "/";
  if (url.startsWith("/photo.jpg")) {
    response.writeHead(200, { "content-type": "image/jpeg", "content-length": jpeg.length });
    response.end(jpeg);
  } else if (url === "/to-metadata") {
    response.writeHead(302, { location: "https://169.254.169.254/latest/meta-data/iam/security-credentials/" });
    response.end();
  } else if (url === "/to-metadata-by-name") {
    response.writeHead(302, { location: "https://metadata.shelter.example/latest/meta-data/" });
    response.end();
  } else if (url === "/to-mapped-loopback") {
    response.writeHead(302, { location: "http://[::ffff:127.0.0.1]/photo.jpg" });
    response.end();
  } else if (url.startsWith("/hop/")) {
    const n = Number(url.slice(5));
    response.writeHead(302, { location: n > 0 ? `/hop/${n - 1}` : "/photo.jpg" });
    response.end();
  } else if (url === "/huge-declared") {
    response.writeHead(200, { "content-type": "image/jpeg", "content-length": 50 * 1024 * 1024 });
    response.write(Buffer.alloc(64 * 1024));
  } else if (url === "/huge-chunked") {
    // 50 MiB without a Content-Length: cut off once past 10 MiB.
    response.writeHead(200, { "content-type": "image/jpeg" });
    const chunk = Buffer.alloc(1024 * 1024, 7);
    let sent = 0;
    const pump = () => {
      while (sent < 50 && response.write(chunk)) sent++;
      if (sent < 50) response.once("drain", pump);
      else response.end();
    };
    response.on("close", () => (sent = 50));
    pump();
  } else if (url === "/stall") {
    // Headers, a first byte, then nothing.
    response.writeHead(200, { "content-type": "image/jpeg" });
    response.write(jpeg.subarray(0, 10));
    stalled.add(response);
  } else if (url === "/stall-headers") {
    stalled.add(response);
  } else if (url === "/trickle") {
    // A photo's head, then one byte every 3 s, for ever.
    trickleBody(response, 200, TRICKLE_EVERY_MS);
    stalled.add(response);
  } else if (url === "/error-trickle") {
    // An error whose body never ends: nothing of it need be read.
    trickleBody(response, 500, TRICKLE_EVERY_MS);
    stalled.add(response);
    response.on("close", () => errorsClosed++);
  } else {
    response.writeHead(404);
    response.end();
  }
};

beforeAll(async () => {
  jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: "#c08040" } }).jpeg().toBuffer();
  photos = await startHttpsServer(routes);
  plain = await startHttpServer(routes);
});
afterAll(async () => {
  for (const response of stalled) response.destroy();
  await photos?.close();
  await plain?.close();
});

const refusal = async (promise: Promise<unknown>): Promise<FetchRefused> => {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(FetchRefused);
    return err as FetchRefused;
  }
  throw new Error("the fetch was not refused");
};

const httpsUrl = (path: string) => `https://${PHOTO_HOST}:${photos.port}${path}`;

describe("the limits are the contract's", () => {
  it("10 MiB, 10 s and 3 redirects", () => {
    expect(SAFE_FETCH_MAX_BYTES).toBe(10 * 1024 * 1024);
    expect(SAFE_FETCH_TIMEOUT_MS).toBe(10_000);
    expect(SAFE_FETCH_MAX_REDIRECTS).toBe(3);
  });
});

describe("refused", () => {
  it("plain http to a host not allow-listed: nothing is requested", async () => {
    const before = plain.requests.length;
    const err = await refusal(safeFetch(`http://127.0.0.1:${plain.port}/photo.jpg`));
    expect(err.reason).toBe("scheme");
    expect(err.message).toMatch(/only https/);
    const byName = await refusal(safeFetch(`http://${PHOTO_HOST}:${plain.port}/photo.jpg`, { resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }) }));
    expect(byName.reason).toBe("scheme");
    expect(plain.requests.length).toBe(before);
  });

  it("a public-looking name that resolves to loopback: refused after DNS resolution, nothing is requested", async () => {
    const before = photos.requests.length;
    const resolve = mappedResolver({ [PHOTO_HOST]: "127.0.0.1" });
    const err = await refusal(safeFetch(httpsUrl("/photo.jpg"), { resolve, ca: testCertificate().cert }));
    expect(err.reason).toBe("address");
    // The name, never the address it resolved to: the partner reads this, and it must not tell them what our DNS sees.
    expect(err.message).toBe(`refused address of ${PHOTO_HOST}: it resolves to a private, loopback, link-local or reserved address`);
    expect(resolve.lookups).toEqual([PHOTO_HOST]);
    // The same through IPv4-mapped IPv6 and the IPv6 loopback.
    for (const address of ["::ffff:127.0.0.1", "::ffff:7f00:1", "::1"]) {
      const mapped = await refusal(safeFetch(httpsUrl("/photo.jpg"), { resolve: mappedResolver({ [PHOTO_HOST]: address }), ca: testCertificate().cert }));
      expect(mapped.reason).toBe("address");
      expect(mapped.message).not.toContain(address);
      expect(mapped.message).not.toMatch(/127\.0\.0\.1|7f00/);
    }
    expect(photos.requests.length).toBe(before);
  });

  it("IP literals in the URL: loopback, private, link-local, metadata, IPv4-mapped", async () => {
    for (const host of ["127.0.0.1", "10.1.2.3", "169.254.169.254", "[::ffff:127.0.0.1]", "[::ffff:169.254.169.254]", "[fd00:ec2::254]", "[::1]", "0.0.0.0"]) {
      const err = await refusal(safeFetch(`https://${host}:${photos.port}/photo.jpg`));
      expect(err.reason, host).toBe("address");
    }
  });

  it("a redirect to 169.254.169.254, by address or by a name resolving to it: the redirect is checked like the first URL", async () => {
    const resolve = mappedResolver({ [PHOTO_HOST]: "127.0.0.1", "metadata.shelter.example": "169.254.169.254" });
    // The first hop is allow-listed (a local test server); the redirect's target is not.
    const options = { resolve, allowHosts: [PHOTO_HOST], ca: testCertificate().cert };
    const byAddress = await refusal(safeFetch(httpsUrl("/to-metadata"), options));
    expect(byAddress.reason).toBe("address");
    expect(byAddress.message).toMatch(/169\.254\.169\.254/);
    const byName = await refusal(safeFetch(httpsUrl("/to-metadata-by-name"), options));
    expect(byName.reason).toBe("address");
    expect(byName.message).toMatch(/metadata\.shelter\.example/);
    expect(byName.message).not.toMatch(/169\.254/);
    expect(resolve.lookups).toContain("metadata.shelter.example");
    const mapped = await refusal(safeFetch(httpsUrl("/to-mapped-loopback"), options));
    expect(mapped.reason).toBe("scheme");
  });

  it("more than 3 redirects", async () => {
    const options = { resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }), allowHosts: [PHOTO_HOST], ca: testCertificate().cert };
    expect((await safeFetch(httpsUrl("/hop/2"), options)).bytes.equals(jpeg)).toBe(true);
    const err = await refusal(safeFetch(httpsUrl("/hop/3"), options));
    expect(err.reason).toBe("redirects");
  });

  it("a 50 MiB body: refused on its Content-Length, or cut off past 10 MiB", async () => {
    const options = { resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }), allowHosts: [PHOTO_HOST], ca: testCertificate().cert };
    const declared = await refusal(safeFetch(httpsUrl("/huge-declared"), options));
    expect(declared.reason).toBe("too-large");
    const chunked = await refusal(safeFetch(httpsUrl("/huge-chunked"), options));
    expect(chunked.reason).toBe("too-large");
    expect(chunked.message).toMatch(/10485760 bytes/);
  });

  it("a server that stalls, after its headers or before them: cut off at the time limit", async () => {
    const options = { resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }), allowHosts: [PHOTO_HOST], ca: testCertificate().cert, timeoutMs: 1_000 };
    const body = await refusal(safeFetch(httpsUrl("/stall"), options));
    expect(body.reason).toBe("timeout");
    expect(body.message).toMatch(/did not arrive within 1 s/);
    const headers = await refusal(safeFetch(`http://${PHOTO_HOST}:${plain.port}/stall-headers`, { ...options }));
    expect(headers.reason).toBe("timeout");
    expect(headers.message).toMatch(/did not arrive within 1 s/);
  });

  it("a server that sends the photo one byte every 3 s: cut at the total deadline, though it is never quiet for long", async () => {
    // 4 s: past the second byte, so an idle timer of that length would never have fired.
    const options = { resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }), allowHosts: [PHOTO_HOST], ca: testCertificate().cert, timeoutMs: 4_000 };
    const before = photos.requests.length;
    const err = await refusal(safeFetch(httpsUrl("/trickle"), options));
    expect(err.reason).toBe("timeout");
    expect(err.message).toBe("the photo did not arrive within 4 s");
    expect(photos.requests.slice(before)).toEqual(["/trickle"]);
  });

  it("an error whose body never ends: refused on its status, none of the body read", async () => {
    const options = { resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }), allowHosts: [PHOTO_HOST], ca: testCertificate().cert, timeoutMs: 60_000 };
    const err = await refusal(safeFetch(httpsUrl("/error-trickle"), options));
    expect(err.reason).toBe("status");
    expect(err.message).toBe("the server answered HTTP 500");
    // And the connection is closed, not left reading the body for ever.
    await eventually(async () => (errorsClosed === 1 ? true : undefined));
  });

  it("an HTTPS server whose certificate is not trusted", async () => {
    const err = await refusal(safeFetch(httpsUrl("/photo.jpg"), { resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }), allowHosts: [PHOTO_HOST] }));
    expect(err.reason).toBe("network");
  });
});

describe("fetched", () => {
  it("an allow-listed local HTTPS server, by a name resolved once: the bytes as served", async () => {
    const resolve = mappedResolver({ [PHOTO_HOST]: "127.0.0.1" });
    const fetched = await safeFetch(httpsUrl("/photo.jpg?id=7&something=.jpg"), { resolve, allowHosts: [PHOTO_HOST], ca: testCertificate().cert });
    expect(fetched.bytes.equals(jpeg)).toBe(true);
    expect(fetched.contentType).toBe("image/jpeg");
    // The connection went to the address the check saw: one lookup, no second one at connect time.
    expect(resolve.lookups).toEqual([PHOTO_HOST]);
  });

  it("an allow-listed local plain HTTP server", async () => {
    const fetched = await safeFetch(`http://${PHOTO_HOST}:${plain.port}/photo.jpg`, { resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }), allowHosts: [PHOTO_HOST] });
    expect(fetched.bytes.equals(jpeg)).toBe(true);
  });
});

describe("the address ranges", () => {
  const refused = [
    "127.0.0.1", "127.255.255.254", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "169.254.0.1",
    "100.64.0.1", "100.127.255.255", "224.0.0.1", "239.255.255.250", "0.0.0.0", "255.255.255.255", "192.0.2.1",
    "::", "::1", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
    "::ffff:a9fe:a9fe", "64:ff9b::7f00:1", "2002:7f00:1::1", "::127.0.0.1",
  ];
  const allowed = ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8"];
  it.each(refused)("refuses %s", (address) => expect(refusedAddress(address)).not.toBeNull());
  it.each(allowed)("allows %s", (address) => expect(refusedAddress(address)).toBeNull());
});
