/**
 * The dashboard page: loads the window's snapshot, then follows the broker's live socket
 * (`/dashboard/live`) — the page never polls; a snapshot is fetched again only when the
 * window changes or the socket had to be opened anew.
 */

import { WINDOWS, readDetail, readLive, readSnapshot } from "./api";
import type { Event, Task } from "./api";
import { byId, el, fill } from "./dom";
import { DetailView } from "./detail";
import { Board, isSettled } from "./model";
import { taskTable, workerTable } from "./tables";
import { timeline } from "./timeline";
import { Trend } from "./trend";

const API = "/dashboard/api";
const WORKING = new Set(["queued", "preparing", "running", "verifying", "needs_input", "rate_limited"]);

const board = new Board();
const detail = new DetailView(byId("detail"));
const tokensTrend = new Trend(byId("trend-tokens"), "tokens");
const costTrend = new Trend(byId("trend-cost"), "cost");
let selected: string | null = null;
let socket: WebSocket | null = null;
let reconnectTimer: number | undefined;
let detailTimer: number | undefined;
let renderQueued = false;

function setStatus(text: string, cls: string): void {
  const s = byId("live");
  s.textContent = text;
  s.className = `live ${cls}`;
}

function windowFromUrl(): string {
  const w = new URLSearchParams(location.hash.slice(1)).get("window");
  return WINDOWS.some((x) => x.value === w) ? (w as string) : "24h";
}

async function getJson(path: string): Promise<unknown> {
  const r = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
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
    detail.show(d, d.task, board.elapsed(d.task));
  } catch (err) {
    detail.clear(`Could not load task ${id}: ${String(err)}`);
  }
}

function select(id: string): void {
  selected = id;
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

function connect(): void {
  const url = new URL("/dashboard/live", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url);
  socket = ws;
  ws.onopen = () => setStatus("live", "on");
  ws.onmessage = (m: MessageEvent<unknown>) => {
    if (typeof m.data !== "string") return;
    const msg = readLive(m.data);
    if (msg === null) return;
    if (msg.type === "events") onEvents(msg.events);
    else if (msg.type === "tasks") onTasks(msg.tasks);
    else if (msg.type === "overflow") ws.close();
  };
  ws.onclose = () => {
    if (socket !== ws) return;
    socket = null;
    setStatus("reconnecting…", "off");
    reconnectLater();
  };
}

function reconnectLater(): void {
  window.clearTimeout(reconnectTimer);
  reconnectTimer = window.setTimeout(() => {
    loadSnapshot().then(connect, (err) => {
      setStatus(`disconnected: ${String(err)}`, "off");
      reconnectLater();
    });
  }, 3000);
}

function setUp(): void {
  const pick = byId<HTMLSelectElement>("window");
  fill(pick, ...WINDOWS.map((w) => el("option", { value: w.value }, w.label)));
  pick.value = windowFromUrl();
  pick.addEventListener("change", () => {
    history.replaceState(null, "", `#window=${pick.value}${selected === null ? "" : `&task=${selected}`}`);
    loadSnapshot().catch((err) => setStatus(String(err), "off"));
  });
  const choose = (e: globalThis.Event): void => {
    const row = (e.target as Element | null)?.closest("[data-task]");
    const id = row?.getAttribute("data-task");
    if (id) select(id);
  };
  byId("timeline").addEventListener("click", choose);
  byId("tasks").addEventListener("click", choose);
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
  loadSnapshot().then(connect, (err) => {
    setStatus(`could not load: ${String(err)}`, "off");
    reconnectLater();
  });
}

setUp();
