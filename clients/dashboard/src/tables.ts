/** The per-worker table and the task list. Each number cell holds its exact value in
 * `data-value`; what it shows is grouped for reading. */

import type { Task } from "./api";
import { el } from "./dom";
import { duration, money } from "./format";
import type { WorkerRow } from "./model";

const whole = (n: number): string => n.toLocaleString("en-US");

function numCell(col: string, value: number, shown = whole(value)): HTMLTableCellElement {
  return el("td", { class: "num", "data-col": col, "data-value": String(value) }, shown);
}

function costCell(cost: number | null, estimated: boolean): HTMLTableCellElement {
  return el(
    "td",
    { class: "num", "data-col": "cost", "data-value": cost === null ? "" : String(cost), title: cost === null ? undefined : estimated ? "estimated from the price table" : "reported by the CLI" },
    money(cost, estimated),
  );
}

function states(s: Record<string, number>): string {
  return Object.entries(s)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${n} ${k}`)
    .join(", ");
}

export function workerTable(rows: WorkerRow[]): HTMLTableElement {
  const total: WorkerRow = { worker: "all", tasks: 0, states: {}, input: 0, cached: 0, output: 0, tokens: 0, cost: null, estimated: false };
  for (const r of rows) {
    total.tasks += r.tasks;
    total.input += r.input;
    total.cached += r.cached;
    total.output += r.output;
    total.tokens += r.tokens;
    if (r.cost !== null) total.cost = (total.cost ?? 0) + r.cost;
    total.estimated ||= r.estimated;
  }
  const line = (r: WorkerRow, cls: string): HTMLTableRowElement =>
    el(
      "tr",
      { class: cls, "data-worker": r.worker },
      el("th", { scope: "row" }, r.worker),
      numCell("tasks", r.tasks),
      el("td", { class: "states" }, states(r.states)),
      numCell("input", r.input),
      numCell("cached", r.cached),
      numCell("output", r.output),
      numCell("tokens", r.tokens),
      costCell(r.cost, r.estimated),
    );
  return el(
    "table",
    { class: "grid", id: "worker-table" },
    el(
      "thead",
      {},
      el("tr", {}, ...["worker", "tasks", "states", "input", "cached", "output", "tokens", "cost"].map((h) => el("th", { scope: "col" }, h))),
    ),
    el("tbody", {}, ...rows.map((r) => line(r, "worker-row"))),
    rows.length > 1 ? el("tfoot", {}, line(total, "total-row")) : null,
  );
}

export function taskTable(tasks: Task[], elapsed: (t: Task) => number, selected: string | null): HTMLTableElement {
  return el(
    "table",
    { class: "grid tasks", id: "task-table" },
    el(
      "thead",
      {},
      el("tr", {}, ...["task", "worker", "state", "elapsed", "input", "cached", "output", "cost"].map((h) => el("th", { scope: "col" }, h))),
    ),
    el(
      "tbody",
      {},
      ...tasks.map((t) =>
        el(
          "tr",
          { class: `task${t.id === selected ? " selected" : ""}`, "data-task": t.id, "data-worker": t.worker, tabindex: "0" },
          el("td", { class: "title" }, el("span", { class: "id" }, t.id.slice(0, 10)), " ", t.title),
          el("td", {}, t.worker),
          el("td", {}, el("span", { class: `state state-${t.state}`, "data-col": "state" }, t.state)),
          el("td", { class: "num", "data-col": "elapsed" }, duration(elapsed(t))),
          numCell("input", t.usage.input),
          numCell("cached", t.usage.cached),
          numCell("output", t.usage.output),
          costCell(t.usage.cost, t.usage.estimated),
        ),
      ),
    ),
  );
}
