import assert from "node:assert/strict";
import test from "node:test";

import { attachmentName, liveProtocols, requestInit, takeSession } from "../../src/session";

test("a cookie's page sends no session of its own", () => {
  assert.deepEqual(requestInit(null, { headers: { Accept: "application/json" } }), {
    headers: { Accept: "application/json" },
    credentials: "same-origin",
  });
  assert.deepEqual(liveProtocols(null), []);
});

test("a framed page sends its session in the header, without cookies, and as the socket's subprotocol", () => {
  assert.deepEqual(requestInit("s1d", { method: "POST", headers: { "X-Baton-CSRF": "c" } }), {
    method: "POST",
    credentials: "omit",
    headers: { "X-Baton-CSRF": "c", "X-Baton-Session": "s1d" },
  });
  assert.deepEqual(requestInit("s1d"), { credentials: "omit", headers: { "X-Baton-Session": "s1d" } });
  assert.deepEqual(liveProtocols("s1d"), ["baton.dashboard", "baton.session.s1d"]);
});

test("the session is taken out of the document once", () => {
  let removed = 0;
  const meta = { getAttribute: (n: string) => (n === "content" ? "s1d" : null), remove: () => (removed += 1) };
  const doc = { querySelector: (q: string) => (q === 'meta[name="baton-session"]' && removed === 0 ? meta : null) };
  assert.equal(takeSession(doc as unknown as Document), "s1d");
  assert.equal(removed, 1);
  assert.equal(takeSession(doc as unknown as Document), null);
});

test("the CSV's name comes from its Content-Disposition", () => {
  assert.equal(attachmentName('attachment; filename="baton-tasks-1h.csv"', "x.csv"), "baton-tasks-1h.csv");
  assert.equal(attachmentName('attachment; filename="../evil"', "x.csv"), "x.csv");
  assert.equal(attachmentName(null, "x.csv"), "x.csv");
});
