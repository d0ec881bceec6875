/**
 * The broker's dashboard page in an editor panel (pure; no vscode import): the server's
 * `baton.dashboard` answer checked, and the panel's HTML — an iframe of the loopback page,
 * with a CSP that lets the panel load that origin and nothing else. The iframe opens the
 * link as a framed page (`&framed=1`, docs/reference/dashboard.md): its session is not a
 * cookie, which a frame of another site than the page's is never sent, but an id the broker
 * hands the page itself, which keeps it in memory and sends it with each request.
 */

import { ProtocolError } from "./protocol";

/** `baton.dashboard`: a one-time URL of the page (it works once, for 120 s). */
export interface DashboardLink {
  /** For a browser tab: traded for the session cookie. */
  url: string;
  /** The same link for the panel's frame: traded for a framed session (no cookie). */
  frameUrl: string;
  /** `http://127.0.0.1:PORT`: the page's origin. */
  origin: string;
  port: number;
  actions: boolean;
}

export function readDashboardLink(value: unknown): DashboardLink {
  if (typeof value !== "object" || value === null) throw new ProtocolError("baton.dashboard: not an object");
  const o = value as Record<string, unknown>;
  if (typeof o.url !== "string") throw new ProtocolError("baton.dashboard: url must be a string");
  let url: URL;
  try {
    url = new URL(o.url);
  } catch {
    throw new ProtocolError(`baton.dashboard: not a URL: ${o.url}`);
  }
  // The page is the broker's, on this machine's loopback, over plain HTTP: nothing else is
  // framed, whatever the answer says.
  if (url.protocol !== "http:" || url.hostname !== "127.0.0.1" || !url.pathname.startsWith("/dashboard/")) {
    throw new ProtocolError(`baton.dashboard: not the broker's loopback page: ${o.url}`);
  }
  const frame = new URL(url.toString());
  frame.searchParams.set("framed", "1");
  return { url: url.toString(), frameUrl: frame.toString(), origin: url.origin, port: Number(url.port), actions: o.actions === true };
}

function attr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** The panel's whole document: a one-line bar with links that open the page again with a
 * fresh link (`reopen`: its link works once, so a reloaded panel needs one) or in the
 * system's browser instead (`inBrowser`), both command URIs, and the page framed below it.
 * `nonce` is the panel's one style. */
export function dashboardHtml(link: DashboardLink, nonce: string, inBrowser: string, reopen: string): string {
  const csp = [`default-src 'none'`, `frame-src ${link.origin}`, `style-src 'nonce-${nonce}'`].join("; ");
  const style = [
    "html,body{margin:0;padding:0;height:100%;overflow:hidden;display:flex;flex-direction:column}",
    "p{margin:0;padding:3px 10px;font:12px var(--vscode-font-family,sans-serif);color:var(--vscode-descriptionForeground)}",
    "a{color:var(--vscode-textLink-foreground)}",
    "iframe{border:0;flex:1;width:100%;display:block;background:#fff}",
  ].join("");
  return [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${attr(csp)}">`,
    `<style nonce="${attr(nonce)}">${style}</style>`,
    "</head><body>",
    `<p id="bar">The broker's dashboard at ${attr(link.origin)} · <a id="reopen" href="command:${attr(reopen)}">Open Again</a> · <a id="in-browser" href="command:${attr(inBrowser)}">Open in Browser</a></p>`,
    `<iframe id="baton-dashboard" title="Baton dashboard" src="${attr(link.frameUrl)}" sandbox="allow-scripts allow-same-origin allow-downloads"></iframe>`,
    "</body></html>",
  ].join("\n");
}
