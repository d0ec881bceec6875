/**
 * The dashboard page: opens the broker's live socket (`/dashboard/live`), then, once it says
 * hello, loads the window's snapshot — so nothing committed falls between the two — and from
 * then on only follows what is pushed: tasks, events, and the transcript of the task shown
 * (`follow`). The page never polls; a snapshot is fetched again only when the window changes
 * or the socket had to be opened anew, a task's detail when its tools, checks, review or
 * diff changed.
 *
 * Its session is the browser's cookie, or — framed by an editor — the id the broker put in
 * the page, kept in memory only and sent with every request (./session).
 */

import { WINDOWS, readDetail, readLive, readSnapshot } from "./api";
import type { Event, Task, TranscriptChange } from "./api";
import { byId, el, fill } from "./dom";
import { DetailView } from "./detail";
import { attachmentName, liveProtocols, requestInit, takeSession } from "./session";
import { Board, isSettled } from "./model";
import { taskTable, workerTable } from "./tables";
import { timeline } from "./timeline";
import { Trend } from "./trend";

const API = "/dashboard/api";
/** The framed session's id (null: the cookie is the session), taken out of the document
 * before anything else runs; the link's spent token goes from the address too. */
const framed = takeSession(document);
if (framed !== null) history.replaceState(null, "", `/dashboard/${location.hash}`);
const WORKING = new Set(["queued", "preparing", "running", "verifying", "needs_input", "rate_limited"]);

const board = new Board();
const detail = new DetailView(byId("detail"), (id, action, hunks) => void act(id, action, hunks));
const tokensTrend = new Trend(byId("trend-tokens"), "tokens");
const costTrend = new Trend(byId("trend-cost"), "cost");
let selected: string | null = null;
let socket: WebSocket | null = null;
let reconnectTimer: number | undefined;
let detailTimer: number | undefined;
let renderQueued = false;
let greeted = false;
let askedWhy = false;
let noSession = false;

function setStatus(text: string, cls: string): void {
  const s = byId("live");
  s.textContent = text;
  s.className = `live ${cls}`;
}

/** What a failed load means for the user: a 401 is a page without a session. */
function failed(err: unknown): void {
  const text = String(err instanceof Error ? err.message : err);
  if (!text.startsWith("401")) {
    setStatus(`disconnected: ${text}`, "off");
    return;
  }
  setStatus("no session", "off");
  noSession = true; // nothing to reconnect with: a new link is a new page
  byId("summary").textContent =
    framed !== null
      ? "This panel's session ended (the broker stopped). Open the dashboard again."
      : window.self !== window.top
        ? "No session in this frame: its browser does not send the page's cookie inside another site's frame. Open the dashboard in the browser instead."
        : "No session: the broker ended it, or the one-time link was used already. Ask for a new link: baton dashboard.";
}

function windowFromUrl(): string {
  const w = new URLSearchParams(location.hash.slice(1)).get("window");
  return WINDOWS.some((x) => x.value === w) ? (w as string) : "24h";
}

async function getJson(path: string): Promise<unknown> {
  const r = await fetch(path, requestInit(framed, { headers: { Accept: "application/json" } }));
  if (!r.ok) throw new Error(`${r.status} ${(await r.text()).trim() || r.statusText}`);
  return (await r.json()) as unknown;
}

async function loadSnapshot(): Promise<void> {
  const w = windowFromUrl();
  const snap = readSnapshot(await getJson(`${API}/snapshot?window=${encodeURIComponent(w)}`));
  board.load(snap);
  byId<HTMLAnchorElement>("csv").href = `${API}/export.csv?window=${encodeURIComponent(snap.window)}`;
  byId<HTMLSelectElement>("window").value = snap.window;
  render();
  if (selected !== null) await loadDetail(selected);
}

async function loadDetail(id: string): Promise<void> {
  try {
    const d = readDetail(await getJson(`${API}/tasks/${encodeURIComponent(id)}`));
    if (selected !== id) return;
    board.update([d.task]);
    detail.show(d, d.task, board.elapsed(d.task), board.actions);
  } catch (err) {
    detail.clear(`Could not load task ${id}: ${String(err)}`);
  }
}

/** Ask the socket for the shown task's transcript (and only its). */
function follow(): void {
  if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ follow: selected === null ? [] : [selected] }));
}

/** An action from the page (only when the broker's actions are on): a POST with the
 * session's CSRF token and no body; the detail is fetched again after it. */
async function act(id: string, action: "accept" | "reject" | "cancel", hunks?: string[]): Promise<void> {
  const query = hunks === undefined ? "" : `?hunks=${encodeURIComponent(hunks.join(","))}`;
  try {
    const r = await fetch(
      `${API}/tasks/${encodeURIComponent(id)}/${action}${query}`,
      requestInit(framed, { method: "POST", headers: { "X-Baton-CSRF": board.csrf } }),
    );
    const text = (await r.text()).trim();
    if (r.ok) await loadDetail(id);
    detail.acted(r.ok ? `${action}: done` : `${action} refused (${r.status}): ${text}`);
  } catch (err) {
    detail.acted(`${action} failed: ${String(err)}`);
  }
}

/** The CSV of a framed page: a link cannot carry the session's header, so the page fetches
 * the file and hands the browser a blob of it to save. */
async function downloadCsv(link: HTMLAnchorElement): Promise<void> {
  try {
    const r = await fetch(link.href, requestInit(framed));
    if (!r.ok) throw new Error(`${r.status} ${(await r.text()).trim() || r.statusText}`);
    const name = attachmentName(r.headers.get("Content-Disposition"), `baton-tasks-${board.window}.csv`);
    const href = URL.createObjectURL(await r.blob());
    const save = el("a", { href, download: name, hidden: "" });
    document.body.append(save);
    save.click();
    save.remove();
    window.setTimeout(() => URL.revokeObjectURL(href), 60_000);
    link.removeAttribute("title");
  } catch (err) {
    link.title = `export failed: ${String(err instanceof Error ? err.message : err)}`;
  }
}

function select(id: string): void {
  selected = id;
  follow();
  history.replaceState(null, "", `#window=${board.window}&task=${id}`);
  render();
  void loadDetail(id);
}

/** Fetch the selected task's detail again soon (its diff, checks or tools changed). */
function refreshDetailSoon(): void {
  if (detailTimer !== undefined || selected === null) return;
  detailTimer = window.setTimeout(() => {
    detailTimer = undefined;
    if (selected !== null) void loadDetail(selected);
  }, 1500);
}

function render(): void {
  const tasks = board.list();
  const width = byId("timeline").clientWidth || 900;
  fill(byId("timeline"), timeline(tasks, board.span().from, board.now(), width, selected));
  fill(byId("workers"), workerTable(board.workers()));
  fill(byId("tasks"), taskTable(tasks, (t) => board.elapsed(t), selected));
  const trend = board.trend();
  const half = Math.max(240, Math.floor((byId("trends").clientWidth || 900) / 2) - 16);
  tokensTrend.render(trend.days, trend.workers, half);
  costTrend.render(trend.days, trend.workers, half);
  const counted = board.counted();
  const working = tasks.filter((t) => WORKING.has(t.state)).length;
  const review = tasks.filter((t) => t.state === "review").length;
  byId("summary").textContent = `${counted.length} task${counted.length === 1 ? "" : "s"} in the window · ${working} working · ${review} in review`;
}

/** Draw again at the next frame, once however many live frames came. */
function renderSoon(): void {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

function onEvents(events: Event[]): void {
  if (selected !== null && detail.taskId === selected && detail.events(events)) refreshDetailSoon();
}

function onTasks(tasks: Task[]): void {
  board.update(tasks);
  renderSoon();
}

function onTranscript(change: TranscriptChange): void {
  if (change.taskId === selected) detail.transcriptChanged(change);
}

function connect(): void {
  const url = new URL("/dashboard/live", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const protocols = liveProtocols(framed);
  const ws = protocols.length === 0 ? new WebSocket(url) : new WebSocket(url, protocols);
  socket = ws;
  let hello = false;
  ws.onmessage = (m: MessageEvent<unknown>) => {
    if (typeof m.data !== "string") return;
    const msg = readLive(m.data);
    if (msg === null) return;
    switch (msg.type) {
      case "hello":
        hello = greeted = true;
        follow();
        loadSnapshot().then(() => setStatus("live", "on"), failed);
        break;
      case "events":
        onEvents(msg.events);
        break;
      case "tasks":
        onTasks(msg.tasks);
        break;
      case "transcript":
        onTranscript(msg);
        break;
      case "error":
        break; // a followed task that is gone: its panel says so when fetched
      case "overflow":
        ws.close();
        break;
    }
  };
  ws.onclose = () => {
    if (socket !== ws) return;
    socket = null;
    setStatus(greeted ? "reconnecting…" : "connecting…", "off");
    // A socket refused before it ever said hello: the snapshot's answer says why (401: no
    // session, the one-time link was used up). Asked once, not at every retry.
    if (!hello && !greeted && !askedWhy) {
      askedWhy = true;
      loadSnapshot().catch(failed);
    }
    reconnectLater();
  };
}

function reconnectLater(): void {
  window.clearTimeout(reconnectTimer);
  if (noSession) return;
  reconnectTimer = window.setTimeout(connect, 3000);
}

function setUp(): void {
  const pick = byId<HTMLSelectElement>("window");
  fill(pick, ...WINDOWS.map((w) => el("option", { value: w.value }, w.label)));
  pick.value = windowFromUrl();
  pick.addEventListener("change", () => {
    history.replaceState(null, "", `#window=${pick.value}${selected === null ? "" : `&task=${selected}`}`);
    loadSnapshot().catch(failed);
  });
  const choose = (e: globalThis.Event): void => {
    const row = (e.target as Element | null)?.closest("[data-task]");
    const id = row?.getAttribute("data-task");
    if (id) select(id);
  };
  byId("timeline").addEventListener("click", choose);
  byId("tasks").addEventListener("click", choose);
  const csv = byId<HTMLAnchorElement>("csv");
  if (framed !== null) {
    csv.addEventListener("click", (e) => {
      e.preventDefault();
      void downloadCsv(csv);
    });
  }
  byId("tasks").addEventListener("keydown", (e) => {
    if (e.key === "Enter") choose(e);
  });
  selected = new URLSearchParams(location.hash.slice(1)).get("task");
  if (selected === null) detail.clear();
  // The bars of unsettled tasks grow with the clock, not with the broker's frames.
  window.setInterval(() => {
    if (board.list().some((t) => !isSettled(t.state))) renderSoon();
  }, 2000);
  window.addEventListener("resize", renderSoon);
  setStatus("connecting…", "off");
  connect();
}

setUp();
