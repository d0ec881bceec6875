/** The per-day trend: tokens and cost per worker per UTC day, drawn by uPlot. */

import uPlot from "uplot";

import type { DayPoint } from "./model";

const COLORS = ["#4e9af1", "#f1a14e", "#5cc98b", "#c96bd6", "#e85d5d", "#d6c94e", "#4ed6d0", "#9a9a9a"];

export class Trend {
  private chart: uPlot | null = null;
  private shape = "";
  private last = "";

  constructor(
    private readonly host: HTMLElement,
    private readonly measure: "tokens" | "cost",
  ) {}

  render(days: number[], workers: Map<string, DayPoint[]>, width: number): void {
    const names = [...workers.keys()].sort();
    const data: uPlot.AlignedData = [
      days,
      ...names.map((n) => (workers.get(n) ?? []).map((p) => (this.measure === "tokens" ? p.tokens : Number(p.cost.toFixed(6))))),
    ];
    const key = JSON.stringify(data);
    const shape = `${names.join("\0")}|${days.length}|${width}`;
    if (this.chart !== null && shape === this.shape) {
      if (key !== this.last) this.chart.setData(data);
      this.last = key;
      return;
    }
    this.chart?.destroy();
    this.shape = shape;
    this.last = key;
    const opts: uPlot.Options = {
      width,
      height: 180,
      title: this.measure === "tokens" ? "tokens per day" : "cost per day (USD)",
      scales: {
        x: { time: true, range: (_u, min, max) => [min - 43_200, max + 43_200] },
        // From zero, and a small scale when there is nothing yet (uPlot's own would be 0–100).
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : this.measure === "cost" ? 0.01 : 10] },
      },
      axes: [
        { stroke: "#999", grid: { stroke: "#3333" } },
        {
          stroke: "#999",
          grid: { stroke: "#3333" },
          size: 60,
          values: (_u, vals) => vals.map((v) => (this.measure === "cost" ? `$${Number(v.toPrecision(3))}` : v >= 1000 ? `${v / 1000}k` : String(v))),
        },
      ],
      series: [
        {},
        ...names.map((n, i) => ({
          label: n,
          stroke: COLORS[i % COLORS.length] ?? "#999",
          width: 2,
          points: { show: true, size: 6 },
        })),
      ],
    };
    this.host.replaceChildren();
    this.chart = new uPlot(opts, data, this.host);
  }
}
