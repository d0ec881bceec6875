/** The timeline: a lane per worker, a row per task, a bar per state it was in, on one time
 * axis from the window's start to now (SVG built from elements). */

import type { Task } from "./api";
import { svg } from "./dom";
import { clock, duration } from "./format";

const LABEL = 120; // px left of the axis, for the worker's name
const ROW = 10;
const GAP = 3;
const LANE_PAD = 10;
const AXIS = 22;
/** A worker shows at most this many rows (its newest tasks); the rest is counted. */
export const MAX_ROWS = 40;

export interface Span {
  phase: string;
  state: string;
  start: number;
  end: number;
}

/** The bars of one task inside [from, to]: its segments clipped to the window, an open one
 * running to `to`; a zero-length settled segment stays, as a tick. */
export function spans(t: Task, from: number, to: number): Span[] {
  const out: Span[] = [];
  for (const s of t.timeline) {
    const end = s.end ?? to;
    if (end < from || s.start > to) continue;
    out.push({ phase: s.phase, state: s.state, start: Math.max(s.start, from), end: Math.min(end, to) });
  }
  return out;
}

function ticks(from: number, to: number): number[] {
  const span = to - from;
  const steps = [60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400, 2 * 86_400, 7 * 86_400];
  const step = steps.find((s) => span / s <= 8) ?? 7 * 86_400;
  const out: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) out.push(t);
  return out;
}

function tickLabel(t: number, span: number): string {
  if (span <= 86_400) return clock(t).slice(0, 5);
  const d = new Date(t * 1000);
  return `${d.getMonth() + 1}/${d.getDate()}${span <= 3 * 86_400 ? ` ${clock(t).slice(0, 5)}` : ""}`;
}

/** The whole timeline for `tasks` (newest first), `width` px wide. */
export function timeline(
  tasks: Task[],
  from: number,
  to: number,
  width: number,
  selected: string | null,
): SVGElement {
  const byWorker = new Map<string, Task[]>();
  for (const t of tasks) {
    const list = byWorker.get(t.worker) ?? [];
    list.push(t);
    byWorker.set(t.worker, list);
  }
  const workers = [...byWorker.keys()].sort();
  const plot = Math.max(100, width - LABEL - 8);
  const x = (ts: number): number => LABEL + ((ts - from) / Math.max(1, to - from)) * plot;
  const lanes: SVGElement[] = [];
  let y = AXIS;
  for (const w of workers) {
    const all = (byWorker.get(w) ?? []).slice().sort((a, b) => a.createdAt - b.createdAt);
    const shown = all.slice(-MAX_ROWS);
    const height = Math.max(36, shown.length * (ROW + GAP) + LANE_PAD);
    const lane = svg(
      "g",
      { class: "lane", "data-worker": w, transform: `translate(0,${y})` },
      svg("rect", { class: "lane-bg", x: 0, y: 0, width, height: height - GAP }),
      svg("text", { class: "lane-label", x: 6, y: 14 }, w),
      svg("text", { class: "lane-count", x: 6, y: 28 }, `${all.length} task${all.length === 1 ? "" : "s"}`),
    );
    shown.forEach((t, i) => {
      const row = svg("g", {
        class: `task-row${t.id === selected ? " selected" : ""}`,
        "data-task": t.id,
        transform: `translate(0,${LANE_PAD / 2 + i * (ROW + GAP)})`,
      });
      for (const s of spans(t, from, to)) {
        const x0 = x(s.start);
        const w0 = Math.max(s.phase === "settled" ? 3 : 1.5, x(s.end) - x0);
        row.append(
          svg(
            "rect",
            { class: `bar phase-${s.phase}`, "data-phase": s.phase, "data-state": s.state, x: x0.toFixed(1), y: 0, width: w0.toFixed(1), height: ROW, rx: 2 },
            svg("title", {}, `${t.title} · ${s.state} ${duration(s.end - s.start)} (${clock(s.start)})`),
          ),
        );
      }
      lane.append(row);
    });
    lanes.push(lane);
    y += height;
  }
  const axis = svg("g", { class: "axis" });
  for (const t of ticks(from, to)) {
    axis.append(
      svg("line", { x1: x(t), x2: x(t), y1: AXIS - 6, y2: Math.max(y, AXIS + 10) }),
      svg("text", { x: x(t) + 3, y: AXIS - 9 }, tickLabel(t, to - from)),
    );
  }
  return svg(
    "svg",
    { class: "timeline", width, height: Math.max(y, AXIS + 24) + 4, role: "img", "aria-label": "timeline of the tasks per worker" },
    axis,
    ...lanes,
    workers.length === 0 ? svg("text", { class: "empty", x: LABEL, y: AXIS + 16 }, "no task in this window") : null,
  );
}
