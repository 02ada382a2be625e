import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../helpers/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ API_CORS_ORIGINS: "https://app.example" });
});
afterAll(async () => {
  await h?.close();
});

describe("browsers may call the API only from the origins in API_CORS_ORIGINS", () => {
  it("answers a preflight from a listed origin without asking for a credential", async () => {
    const res = await h.api.app.inject({
      method: "OPTIONS",
      url: "/v1/safety/lost-reports",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type,authorization" },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers["access-control-allow-origin"]).toBe("https://app.example");
    expect(String(res.headers["access-control-allow-headers"])).toContain("authorization");
  });

  it("gives no allow-origin header to an origin that is not listed", async () => {
    const res = await h.api.app.inject({ method: "GET", url: "/healthz", headers: { origin: "https://evil.example" } });
    expect(res.statusCode).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("exposes the request id to a listed origin on an ordinary response", async () => {
    const res = await h.api.app.inject({ method: "GET", url: "/healthz", headers: { origin: "https://app.example" } });
    expect(res.headers["access-control-allow-origin"]).toBe("https://app.example");
    expect(String(res.headers["access-control-expose-headers"])).toContain("x-request-id");
  });
});
