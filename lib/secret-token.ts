import { createHash, randomBytes } from "node:crypto";

/**
 * Secret tokens carried in URLs: tag page tokens and email confirmation
 * links. Only a token's sha256 is stored.
 */

/** 32 random bytes (256 bits) in base64url: always 43 characters. */
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export const newToken = (): string => randomBytes(32).toString("base64url");

/** Only this hash is stored; any string hashes, so a malformed token is looked up like an unknown one. */
export const hashToken = (token: string): Buffer => createHash("sha256").update(token, "utf8").digest();
