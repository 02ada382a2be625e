import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Credential, Method } from "./api";

/** The signed-in person, as the screens see them. */
export interface Session {
  credential: Credential;
  /** The actor id the API sees: the token's subject, or the debug actor. */
  actorId: string;
  /** call() with the credential bound; a 401 that stays signs the person out. */
  request<T>(method: Method, path: string, body?: unknown): Promise<T>;
  signOut(reason?: string): void;
}

export const SessionContext = createContext<Session | null>(null);
export const useSession = () => useContext(SessionContext);
