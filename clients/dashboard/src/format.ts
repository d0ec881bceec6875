/** How numbers read in the page's cells (pure). */

/** `58.9k`, `1.2M`, `412`, `-` for none: a token count (as the CLI's tables write it). */
export function tokens(count: number): string {
  if (!count) return "-";
  if (count >= 1_000_000) return `${(count / 1_000_000).toFixed(1)}M`;
  return count >= 1000 ? `${(count / 1000).toFixed(1)}k` : String(count);
}

/** `$0.1773`, `~$0.0012` for an estimate, `-` for no cost. */
export function money(cost: number | null, estimated = false): string {
  if (cost === null) return "-";
  return `${estimated ? "~" : ""}$${cost.toFixed(4)}`;
}

/** `4 s`, `1 m 05 s`, `2 h 03 m`: an elapsed time in seconds. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${String(s % 60).padStart(2, "0")} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${String(m % 60).padStart(2, "0")} m`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** `14:03:22` (local time) of a unix time in seconds. */
export function clock(ts: number): string {
  const d = new Date(ts * 1000);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}
