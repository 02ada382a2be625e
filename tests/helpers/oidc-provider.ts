import { createServer, type Server } from "node:http";
import { exportJWK, generateKeyPair } from "jose";
import Provider, { type Configuration } from "oidc-provider";
import { TEST_AUDIENCE } from "./jwks.js";

/** The resource the app names (APP_OIDC_RESOURCE): the provider issues the API's JWT access token for it. */
export const TEST_RESOURCE = "https://api.test.example/";
export const TEST_CLIENT_ID = "animal-safety-app";

export interface OidcProviderOptions {
  /** The redirect URIs the public client may use: the app's and the console's callbacks. */
  redirectUris: string[];
  /** Roles put in the access token's `roles` claim, by account id (the login typed on the provider's page). */
  roles?: Record<string, string[]>;
  /** Access token lifetime in seconds (default 600): a short one makes the app refresh soon. */
  accessTokenTtl?: number;
}

export interface TestOidcProvider {
  issuer: string;
  /** The API settings that trust this provider's access tokens. */
  apiEnv: Record<string, string>;
  /** Every token endpoint request's grant_type, in order. */
  tokenGrants: string[];
  stop(): Promise<void>;
}

/**
 * Reserves a loopback port for a provider whose client is known only later:
 * the API's settings need the issuer before it listens, and the provider's
 * client needs the API's port for its redirect URIs.
 */
export async function reserveProviderPort(): Promise<{ server: Server; issuer: string }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, issuer: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

/**
 * panva's oidc-provider on loopback, the real OpenID provider of the app's
 * tests: its development login and consent pages (any login, which becomes
 * the subject), PKCE required for the public client, refresh tokens, and
 * JWT access tokens (RS256) for the API's audience, which the API verifies
 * through the provider's /jwks like any other.
 */
export async function startOidcProvider(reserved: { server: Server; issuer: string }, options: OidcProviderOptions): Promise<TestOidcProvider> {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: "oidc-test-key", alg: "RS256", use: "sig" };
  const roles = options.roles ?? {};
  const tokenGrants: string[] = [];
  const configuration: Configuration = {
    clients: [
      {
        client_id: TEST_CLIENT_ID,
        token_endpoint_auth_method: "none",
        redirect_uris: options.redirectUris,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      },
    ],
    jwks: { keys: [signingKey as never] },
    cookies: { keys: ["oidc-test-cookie-key"] },
    pkce: { required: () => true },
    // The app calls the token endpoint from its own origin: the client's redirect origins may.
    clientBasedCORS: (_ctx, origin, client) => (client.redirectUris ?? []).some((uri) => new URL(uri).origin === origin),
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => TEST_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resourceIndicator) => {
          if (resourceIndicator !== TEST_RESOURCE) throw new Error(`unknown resource ${resourceIndicator}`);
          return {
            scope: "openid offline_access",
            audience: TEST_AUDIENCE,
            accessTokenTTL: options.accessTokenTtl ?? 600,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "RS256" } },
          };
        },
      },
    },
    // A refresh token for the public client whatever the prompt: the app refreshes through the provider.
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed("refresh_token"),
    extraTokenClaims: (_ctx, token) => {
      const accountId = (token as { accountId?: string }).accountId;
      return accountId && roles[accountId] ? { roles: roles[accountId] } : undefined;
    },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    ttl: { AccessToken: options.accessTokenTtl ?? 600, IdToken: 600, RefreshToken: 3600, Session: 3600, Grant: 3600, Interaction: 600 },
  };
  const provider = new Provider(reserved.issuer, configuration);
  provider.on("grant.success", (ctx) => tokenGrants.push(String((ctx.oidc.params as { grant_type?: string } | undefined)?.grant_type)));
  const callback = provider.callback();
  reserved.server.on("request", callback);
  return {
    issuer: reserved.issuer,
    apiEnv: { AUTH_ISSUER: reserved.issuer, AUTH_JWKS_URL: `${reserved.issuer}/jwks`, AUTH_AUDIENCE: TEST_AUDIENCE },
    tokenGrants,
    async stop() {
      const closed = new Promise<void>((resolve) => reserved.server.close(() => resolve()));
      reserved.server.closeAllConnections();
      await closed;
    },
  };
}
