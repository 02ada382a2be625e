import { createServer, type Server } from "node:http";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, base64url, type CryptoKey, type JWTPayload } from "jose";

export const TEST_ISSUER = "https://idp.test.example/";
export const TEST_AUDIENCE = "animal-safety-api";
const KID = "test-key-1";

export interface SignOptions {
  sub?: string | null;
  roles?: string[];
  issuer?: string;
  audience?: string;
  /** Seconds from now; negative for an expired token. */
  expiresIn?: number;
  /** Seconds from now before which the token is not valid. */
  notBeforeIn?: number;
  claims?: JWTPayload;
  /** Sign with a key the JWKS does not hold (same kid): a bad signature. */
  foreignKey?: boolean;
}

/**
 * A stand-in identity provider: an RS256 key pair generated per test file,
 * its public half served as a JWKS on a local port, and a token signer.
 */
export class TestIdentityProvider {
  private constructor(
    private readonly server: Server,
    private readonly privateKey: CryptoKey,
    private readonly foreignPrivateKey: CryptoKey,
    readonly publicKeyPem: string,
    readonly jwksUrl: string,
  ) {}

  static async start(): Promise<TestIdentityProvider> {
    const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
    const foreign = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(publicKey)), kid: KID, alg: "RS256", use: "sig" };
    const body = JSON.stringify({ keys: [jwk] });
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    return new TestIdentityProvider(
      server,
      privateKey,
      foreign.privateKey,
      await exportSPKI(publicKey),
      `http://127.0.0.1:${port}/.well-known/jwks.json`,
    );
  }

  /** The API settings that point at this provider. */
  get env(): Record<string, string> {
    return { AUTH_JWKS_URL: this.jwksUrl, AUTH_ISSUER: TEST_ISSUER, AUTH_AUDIENCE: TEST_AUDIENCE };
  }

  async sign(options: SignOptions = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT({ ...(options.roles ? { roles: options.roles } : {}), ...options.claims })
      .setProtectedHeader({ alg: "RS256", kid: KID, typ: "JWT" })
      .setIssuer(options.issuer ?? TEST_ISSUER)
      .setAudience(options.audience ?? TEST_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + (options.expiresIn ?? 300));
    if (options.sub !== null) jwt.setSubject(options.sub ?? "user-1");
    if (options.notBeforeIn !== undefined) jwt.setNotBefore(now + options.notBeforeIn);
    return jwt.sign(options.foreignKey ? this.foreignPrivateKey : this.privateKey);
  }

  /** An unsigned token (`alg: none`) with otherwise valid claims. */
  unsigned(sub = "user-1", roles: string[] = []): string {
    const now = Math.floor(Date.now() / 1000);
    const encode = (value: object) => base64url.encode(JSON.stringify(value));
    const claims = { sub, roles, iss: TEST_ISSUER, aud: TEST_AUDIENCE, iat: now, exp: now + 300 };
    return `${encode({ alg: "none", typ: "JWT" })}.${encode(claims)}.`;
  }

  /** The key-confusion attack: HS256 with the provider's public key as the HMAC secret. */
  async hs256WithPublicKey(sub = "user-1", roles: string[] = []): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ roles })
      .setProtectedHeader({ alg: "HS256", kid: KID, typ: "JWT" })
      .setSubject(sub)
      .setIssuer(TEST_ISSUER)
      .setAudience(TEST_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(new TextEncoder().encode(this.publicKeyPem));
  }

  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Settings for API_ENV=test: every security-sensitive setting set, no debug bypass. */
export function secureEnv(idp: TestIdentityProvider): Record<string, string> {
  return {
    API_ENV: "test",
    API_DEV_AUTH_BYPASS: "false",
    ...idp.env,
    API_CORS_ORIGINS: "https://console.test.example",
    OBJECT_STORAGE_ENDPOINT: "http://127.0.0.1:9",
    OBJECT_STORAGE_BUCKET: "test-photos",
    OBJECT_STORAGE_ACCESS_KEY_ID: "test-access-key",
    OBJECT_STORAGE_SECRET_ACCESS_KEY: "test-secret-key",
    ALERT_UNSUBSCRIBE_SECRET: "test-alert-unsubscribe-secret-32-chars-or-more",
    PUBLIC_BASE_URL: "https://share.test.example",
    // A fixed pair for tests only: web-push's generateVAPIDKeys made it.
    VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
    VAPID_PRIVATE_KEY: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
    VAPID_SUBJECT: "mailto:ops@test.example",
  };
}
