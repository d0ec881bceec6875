/** One task's panel: its state and numbers, the live transcript, the tools and files, checks,
 * review findings and the diff, read-only, hunk by hunk. */

import type { Detail, Event, FileDiff, Hunk, Task, TranscriptChange } from "./api";
import { el, fill } from "./dom";
import { duration, money } from "./format";

function lines(text: string): string[] {
  const out = text.split("\n");
  if (out.length > 0 && out[out.length - 1] === "") out.pop();
  return out;
}

/** What the page may do to a task when the broker's actions are on (`[dashboard] actions`). */
export type Act = (taskId: string, action: "accept" | "reject" | "cancel", hunks?: string[]) => void;

const WORKING = new Set(["queued", "preparing", "running", "verifying", "needs_input", "rate_limited"]);

function button(label: string, action: string, onClick: () => void): HTMLButtonElement {
  const b = el("button", { type: "button", class: `act act-${action}`, "data-action": action }, label);
  b.addEventListener("click", onClick);
  return b;
}

function hunkView(h: Hunk, act: ((action: "accept" | "reject") => void) | null): HTMLElement {
  const rows: HTMLElement[] = [];
  let o = h.oldStart;
  let n = h.newStart;
  for (const l of lines(h.oldText)) rows.push(el("div", { class: "line del" }, el("span", { class: "ln" }, String(o++)), el("span", { class: "ln" }), `-${l}`));
  for (const l of lines(h.newText)) rows.push(el("div", { class: "line add" }, el("span", { class: "ln" }), el("span", { class: "ln" }, String(n++)), `+${l}`));
  return el(
    "div",
    { class: `hunk hunk-${h.state}`, "data-hunk": h.id },
    el(
      "div",
      { class: "hunk-head" },
      `@@ -${h.oldStart} +${h.newStart} @@`,
      el(
        "span",
        {},
        act !== null && h.state === "pending" ? button("accept", "accept", () => act("accept")) : null,
        act !== null && h.state === "pending" ? button("reject", "reject", () => act("reject")) : null,
        el("span", { class: "hunk-state" }, h.state),
      ),
    ),
    el("div", { class: "hunk-body" }, ...rows),
  );
}

function fileView(f: FileDiff, act: ((action: "accept" | "reject", hunk: string) => void) | null): HTMLElement {
  return el(
    "section",
    { class: "diff-file", "data-path": f.path },
    el("h4", {}, f.path, el("span", { class: "muted" }, ` ${f.status} +${f.added} -${f.removed}`)),
    ...f.hunks.map((h) => hunkView(h, act === null ? null : (a) => act(a, h.id))),
  );
}

/** Events after which the panel's other parts (tools, files, checks, review, diff) are
 * fetched again; the transcript follows by itself (`follow` on the live socket). */
const CHANGES = new Set(["diff", "verify", "review", "tool", "tool_result", "state", "final"]);

export class DetailView {
  private detail: Detail | null = null;
  private seq = 0;
  private transcript: HTMLElement | null = null;
  /** The shown task's transcript lines, and the last event they hold. */
  private lines: string[] = [];
  private linesSeq = -1;
  private linesOf = "";

  constructor(
    private readonly host: HTMLElement,
    private readonly act: Act,
  ) {}

  get taskId(): string | null {
    return this.detail?.task.id ?? null;
  }

  /** The last event this panel shows. */
  get lastSeq(): number {
    return this.seq;
  }

  clear(message = "Select a task in the timeline or the list."): void {
    this.detail = null;
    this.seq = 0;
    this.linesOf = "";
    fill(this.host, el("p", { class: "muted" }, message));
  }

  /** Show a task's detail; with `actions` (the broker's setting), its moves as buttons. */
  show(d: Detail, task: Task, elapsed: number, actions = false): void {
    this.detail = d;
    this.seq = d.seq;
    const t = task;
    if (this.linesOf !== t.id) {
      this.linesOf = t.id;
      this.linesSeq = -1;
    }
    if (d.seq > this.linesSeq) {
      this.lines = d.transcript.slice();
      this.linesSeq = d.seq;
    }
    this.transcript = el("pre", { class: "transcript", id: "transcript" }, this.lines.join("\n"));
    fill(
      this.host,
      el("h2", {}, t.title),
      actions ? this.moves(t) : null,
      el(
        "dl",
        { class: "facts", id: "task-facts" },
        ...fact("id", t.id),
        ...fact("worker", t.model ? `${t.worker} (${t.model})` : t.worker),
        ...fact("state", t.state + (t.completion && t.completion !== "completed" ? ` · ${t.completion}` : ""), "state"),
        ...fact("elapsed", duration(elapsed), "elapsed"),
        ...fact("tokens", `${t.usage.input} in · ${t.usage.cached} cached · ${t.usage.output} out`),
        ...fact("cost", money(t.usage.cost, t.usage.estimated)),
        ...(t.message ? fact("message", t.message) : []),
      ),
      el("h3", {}, "Transcript"),
      this.transcript,
      el("h3", {}, "Tool calls"),
      d.tools.length === 0
        ? el("p", { class: "muted" }, "none yet")
        : el(
            "ul",
            { class: "tools", id: "tools" },
            ...d.tools.map((c) =>
              el(
                "li",
                { class: c.ok === false ? "failed" : "" },
                el("code", {}, c.name),
                " ",
                c.files.length > 0 ? c.files.join(", ") : c.input.split("\n")[0]?.slice(0, 160),
                c.ok === null ? el("span", { class: "muted" }, " running") : c.ok ? "" : el("span", { class: "bad" }, " failed"),
              ),
            ),
          ),
      el("h3", {}, "Files touched"),
      d.files.length === 0 ? el("p", { class: "muted" }, "none") : el("ul", { class: "files", id: "files" }, ...d.files.map((f) => el("li", {}, el("code", {}, f)))),
      ...(d.checks.length === 0
        ? []
        : [
            el("h3", {}, "Checks"),
            el(
              "ul",
              { class: "checks", id: "checks" },
              ...d.checks.map((c) =>
                el(
                  "li",
                  { class: c.passed ? "good" : "bad" },
                  `${c.passed ? "✓" : "✗"} ${c.name}`,
                  c.seconds === null ? "" : ` (${c.seconds.toFixed(1)} s)`,
                  c.passed || !c.output ? null : el("pre", { class: "output" }, c.output),
                ),
              ),
            ),
          ]),
      ...(d.review.length === 0
        ? []
        : [
            el("h3", {}, "Review"),
            ...d.review.map((r) =>
              el(
                "div",
                { class: "review" },
                el("p", {}, el("strong", {}, r.worker), `: ${r.verdict}`, r.summary ? ` — ${r.summary}` : ""),
                el(
                  "ul",
                  { class: "findings" },
                  ...r.findings.map((f) => el("li", {}, el("code", {}, f.line === null ? f.path : `${f.path}:${f.line}`), ` ${f.message}`)),
                ),
              ),
            ),
          ]),
      el("h3", {}, d.diff === null ? "Diff" : d.diff.final ? "Diff" : "Diff (draft, while it works)"),
      d.diff === null || d.diff.files.length === 0
        ? el("p", { class: "muted" }, "no change yet")
        : el(
            "div",
            { class: "diff", id: "diff" },
            ...d.diff.files.map((f) => fileView(f, actions && t.state === "review" ? (a, hunk) => this.act(t.id, a, [hunk]) : null)),
          ),
    );
  }

  /** The task's moves as buttons, and where the broker's answer to the last one shows. */
  private moves(t: Task): HTMLElement {
    const buttons: HTMLElement[] = [];
    if (WORKING.has(t.state)) buttons.push(button("Cancel", "cancel", () => this.act(t.id, "cancel")));
    if (t.state === "review") {
      buttons.push(button("Accept all", "accept", () => this.act(t.id, "accept")), button("Reject all", "reject", () => this.act(t.id, "reject")));
    }
    return el("p", { class: "moves", id: "moves" }, ...buttons, el("span", { class: "muted", id: "act-result" }));
  }

  /** What the broker answered to an action (its refusal, or what it did). */
  acted(text: string): void {
    const out = this.host.querySelector("#act-result");
    if (out !== null) out.textContent = text;
  }

  /** A followed transcript changed (a live `transcript` frame): its lines from `start` on
   * are replaced, and the text redrawn, kept scrolled to the end if it was there. */
  transcriptChanged(c: TranscriptChange): void {
    if (c.taskId !== this.linesOf) {
      if (c.start !== 0) return; // the rest of a transcript this panel does not hold
      this.linesOf = c.taskId;
    }
    this.lines.splice(c.start, Infinity, ...c.lines);
    this.linesSeq = Math.max(this.linesSeq, c.seq);
    const box = this.transcript;
    if (box === null || this.detail?.task.id !== c.taskId) return;
    const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
    box.textContent = this.lines.join("\n");
    if (atEnd) box.scrollTop = box.scrollHeight;
  }

  /** True when one of these events (after what the panel shows) changed its other parts:
   * the detail should be fetched again. */
  events(events: Event[]): boolean {
    if (this.detail === null) return false;
    let stale = false;
    for (const e of events) {
      if (e.taskId !== this.detail.task.id || e.seq <= this.seq) continue;
      this.seq = e.seq;
      if (CHANGES.has(e.type)) stale = true;
    }
    return stale;
  }
}

function fact(name: string, value: string, col?: string): HTMLElement[] {
  return [el("dt", {}, name), el("dd", col === undefined ? {} : { "data-col": col }, value)];
}
