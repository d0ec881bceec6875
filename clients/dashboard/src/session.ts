/**
 * How the page proves its session (docs/reference/dashboard.md, "Getting in"). Opened in a
 * browser tab, by the HttpOnly cookie the one-time link was traded for: the page sends
 * nothing of its own. Framed by an editor (another site, where no cookie reaches the page),
 * by a framed session: the broker answers the link `?t=TOKEN&framed=1` with the page and the
 * session's id in `<meta name="baton-session">`; the page takes it out of the document and
 * keeps it in this module's memory only — never in storage, never in a URL — and sends it
 * as `X-Baton-Session` on every request and as the subprotocol `baton.session.ID` beside
 * `baton.dashboard` on the live socket (a browser's WebSocket sends no header of its own).
 */

export const SESSION_HEADER = "X-Baton-Session";
export const SUBPROTOCOL = "baton.dashboard";
export const SESSION_PROTOCOL = "baton.session.";

/** The framed session's id, or null: the page's session is its cookie. */
export type Framed = string | null;

/** The session id the broker put in the framed page (the element removed once read). */
export function takeSession(doc: Document): Framed {
  const meta = doc.querySelector('meta[name="baton-session"]');
  if (meta === null) return null;
  const id = meta.getAttribute("content") ?? "";
  meta.remove();
  return id === "" ? null : id;
}

/** What a request of the page carries besides `extra`: the framed session's header (and no
 * cookie), or the cookie (same origin). */
export function requestInit(framed: Framed, init: RequestInit & { headers?: Record<string, string> } = {}): RequestInit {
  if (framed === null) return { ...init, credentials: "same-origin" };
  return { ...init, credentials: "omit", headers: { ...init.headers, [SESSION_HEADER]: framed } };
}

/** The subprotocols the live socket asks for: none with a cookie. */
export function liveProtocols(framed: Framed): string[] {
  return framed === null ? [] : [SUBPROTOCOL, SESSION_PROTOCOL + framed];
}

/** The file name a `Content-Disposition: attachment; filename="…"` answer names, or `fallback`. */
export function attachmentName(disposition: string | null, fallback: string): string {
  const m = /filename="([^"/\\]+)"/.exec(disposition ?? "");
  return m?.[1] ?? fallback;
}
