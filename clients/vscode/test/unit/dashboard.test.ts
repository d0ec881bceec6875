import assert from "node:assert/strict";
import test from "node:test";

import { dashboardHtml, readDashboardLink } from "../../src/common/dashboard";

const URL_ = "http://127.0.0.1:40123/dashboard/?t=abc";

test("the server's one-time link is read and its origin kept", () => {
  const link = readDashboardLink({ url: URL_, origin: "http://127.0.0.1:40123", port: 40123, expires: 1, actions: false });
  assert.deepEqual(link, { url: URL_, frameUrl: `${URL_}&framed=1`, origin: "http://127.0.0.1:40123", port: 40123, actions: false });
});

test("only the broker's loopback page is framed", () => {
  for (const url of [
    "https://127.0.0.1:40123/dashboard/?t=a",
    "http://localhost:40123/dashboard/?t=a",
    "http://example.com/dashboard/?t=a",
    "http://127.0.0.1:40123/elsewhere",
    "not a url",
  ]) {
    assert.throws(() => readDashboardLink({ url }), /baton.dashboard/, url);
  }
  assert.throws(() => readDashboardLink(null));
  assert.throws(() => readDashboardLink({}));
});

test("the panel frames the page as a framed page (no cookie) and allows that origin only", () => {
  const html = dashboardHtml(readDashboardLink({ url: URL_ }), "n0nce", "baton.client.openDashboardInBrowser", "baton.client.openDashboard");
  assert.match(html, /<iframe [^>]*src="http:\/\/127\.0\.0\.1:40123\/dashboard\/\?t=abc&amp;framed=1"/);
  const csp = /Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1] ?? "";
  assert.equal(csp, "default-src 'none'; frame-src http://127.0.0.1:40123; style-src 'nonce-n0nce'");
  assert.doesNotMatch(html, /<script/);
  assert.match(html, /<a id="in-browser" href="command:baton\.client\.openDashboardInBrowser">Open in Browser<\/a>/);
  assert.match(html, /<a id="reopen" href="command:baton\.client\.openDashboard">Open Again<\/a>/);
});
