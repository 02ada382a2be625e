import * as oauth from "oauth4webapi";

/**
 * OpenID Connect sign-in for the browser bundles (the app, the console):
 * authorization code with PKCE against the API's identity provider, through
 * oauth4webapi. The tokens live in this object's memory only; what must
 * survive the redirect (the PKCE verifier, state and nonce, and where to come
 * back to) waits in sessionStorage and is used once. docs/decisions/0097.
 */

export interface OidcSettings {
  issuer: string;
  clientId: string;
  scope: string;
  /** RFC 8707 resource indicator, sent on the authorization and token requests when set. */
  resource: string | null;
}

/** What the app knows of its tokens; never written to any storage. */
interface Tokens {
  accessToken: string;
  refreshToken: string | null;
  /** Epoch milliseconds. */
  expiresAt: number;
  subject: string;
}

interface Pending {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
  silent: boolean;
}

/** A refused sign-in: a forged, replayed or failed authorization response, or a provider's error. */
export class SignInError extends Error {
  constructor(
    message: string,
    /** The provider's error code for a silent attempt (login_required, …): not worth showing. */
    readonly providerError: string | null = null,
  ) {
    super(message);
  }
}

// Plain http only for a provider on this machine (a developer's or a test's); oauth4webapi refuses it otherwise.
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);
/** Refresh when this share of the access token's life has passed. */
const REFRESH_AT = 0.75;

export class OidcSession {
  readonly #settings: OidcSettings;
  readonly #redirectUri: string;
  readonly #pendingKey: string;
  readonly #client: oauth.Client;
  readonly #options: { [oauth.allowInsecureRequests]?: boolean };
  #server: Promise<oauth.AuthorizationServer> | null = null;
  #tokens: Tokens | null = null;
  #refreshing: Promise<void> | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** Told when the session ends on its own (a refresh the provider refused). */
  onEnded: ((reason: string) => void) | null = null;

  constructor(settings: OidcSettings, redirectPath: string) {
    this.#settings = settings;
    this.#redirectUri = new URL(redirectPath, location.origin).href;
    this.#pendingKey = `oidc.pending:${redirectPath}`;
    this.#client = { client_id: settings.clientId };
    const issuer = new URL(settings.issuer);
    this.#options = issuer.protocol === "http:" && LOOPBACK.has(issuer.hostname) ? { [oauth.allowInsecureRequests]: true } : {};
  }

  get redirectUri(): string {
    return this.#redirectUri;
  }

  get subject(): string | null {
    return this.#tokens?.subject ?? null;
  }

  get signedIn(): boolean {
    return this.#tokens !== null;
  }

  #discover(): Promise<oauth.AuthorizationServer> {
    this.#server ??= (async () => {
      const issuer = new URL(this.#settings.issuer);
      const response = await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...this.#options });
      return oauth.processDiscoveryResponse(issuer, response);
    })().catch((err: unknown) => {
      this.#server = null;
      throw err;
    });
    return this.#server;
  }

  /** Goes to the provider's sign-in page; `silent` asks it not to show one (prompt=none). */
  async begin(options: { returnTo: string; silent?: boolean }): Promise<never> {
    const server = await this.#discover();
    if (!server.authorization_endpoint) throw new SignInError("the provider has no authorization endpoint");
    const pending: Pending = {
      state: oauth.generateRandomState(),
      nonce: oauth.generateRandomNonce(),
      verifier: oauth.generateRandomCodeVerifier(),
      returnTo: options.returnTo,
      silent: options.silent ?? false,
    };
    const url = new URL(server.authorization_endpoint);
    const params: Record<string, string> = {
      client_id: this.#client.client_id,
      redirect_uri: this.#redirectUri,
      response_type: "code",
      scope: this.#settings.scope,
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: "S256",
    };
    if (this.#settings.resource) params.resource = this.#settings.resource;
    if (pending.silent) params.prompt = "none";
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    sessionStorage.setItem(this.#pendingKey, JSON.stringify(pending));
    location.assign(url.href);
    // The page is leaving.
    return new Promise<never>(() => undefined);
  }

  /**
   * Takes the authorization response at the redirect URI. The response is
   * used once: the pending state is removed first, so a replayed or forged
   * response (no pending sign-in, another state, another nonce, a code
   * without this tab's PKCE verifier) is refused. Returns where to go back to.
   */
  async complete(callbackUrl: URL): Promise<string> {
    const raw = sessionStorage.getItem(this.#pendingKey);
    sessionStorage.removeItem(this.#pendingKey);
    const pending = raw ? (JSON.parse(raw) as Pending) : null;
    if (!pending) throw new SignInError("no sign-in was started in this tab, or its response was already used");
    const server = await this.#discover();
    let params: URLSearchParams;
    try {
      params = oauth.validateAuthResponse(server, this.#client, callbackUrl.searchParams, pending.state);
    } catch (err) {
      if (err instanceof oauth.AuthorizationResponseError) {
        const code = err.error;
        throw new SignInError(pending.silent ? "not signed in at the provider" : `the provider refused: ${err.error_description ?? code}`, code);
      }
      throw new SignInError("the sign-in response does not belong to the sign-in this tab started");
    }
    const extra = this.#settings.resource ? { additionalParameters: { resource: this.#settings.resource } } : {};
    try {
      const response = await oauth.authorizationCodeGrantRequest(server, this.#client, oauth.None(), params, this.#redirectUri, pending.verifier, {
        ...this.#options,
        ...extra,
      });
      const result = await oauth.processAuthorizationCodeResponse(server, this.#client, response, { expectedNonce: pending.nonce, requireIdToken: true });
      this.#keep(result);
    } catch (err) {
      throw new SignInError(`the provider's tokens were refused: ${(err as Error).message}`);
    }
    return pending.returnTo;
  }

  #keep(result: oauth.TokenEndpointResponse): void {
    const claims = oauth.getValidatedIdTokenClaims(result);
    const subject = claims?.sub ?? this.#tokens?.subject;
    if (!subject) throw new SignInError("the provider's answer names no subject");
    const lifetime = (result.expires_in ?? 300) * 1000;
    this.#tokens = {
      accessToken: result.access_token,
      // A provider that rotates refresh tokens sends a new one; one that does not keeps the old.
      refreshToken: result.refresh_token ?? this.#tokens?.refreshToken ?? null,
      expiresAt: Date.now() + lifetime,
      subject,
    };
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#tokens.refreshToken) {
      this.#timer = setTimeout(() => void this.refresh().catch(() => undefined), lifetime * REFRESH_AT);
    }
  }

  /** Gets new tokens from the provider with the refresh token; a refusal ends the session. */
  refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      const refreshToken = this.#tokens?.refreshToken;
      if (!refreshToken) throw new SignInError("no refresh token");
      try {
        const server = await this.#discover();
        const extra = this.#settings.resource ? { additionalParameters: { resource: this.#settings.resource } } : {};
        const response = await oauth.refreshTokenGrantRequest(server, this.#client, oauth.None(), refreshToken, { ...this.#options, ...extra });
        this.#keep(await oauth.processRefreshTokenResponse(server, this.#client, response));
      } catch (err) {
        if (err instanceof oauth.ResponseBodyError) {
          this.end();
          this.onEnded?.("the provider ended the session");
        }
        throw err;
      }
    })().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  /** The access token for the next API call, refreshed first when it has run out. */
  async accessToken(): Promise<string | null> {
    if (this.#tokens && this.#tokens.refreshToken && Date.now() >= this.#tokens.expiresAt - 5_000) {
      await this.refresh().catch(() => undefined);
    }
    return this.#tokens?.accessToken ?? null;
  }

  /** Forgets the tokens (the provider's own session is left as it is). */
  end(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#tokens = null;
  }

  /** Whether this URL is this session's redirect URI. */
  isCallback(url: URL): boolean {
    return url.origin + url.pathname === new URL(this.#redirectUri).origin + new URL(this.#redirectUri).pathname;
  }
}
