/**
 * Where the extension installs its own Baton server and how (pure): a virtual environment
 * under the extension's global storage, made by a Python ≥ 3.11 found on this machine, with
 * `baton-lsp` from the wheel shipped in the .vsix (`server/*.whl`), else from the index.
 */

import * as path from "node:path";

/** The Python distribution that holds the server (its command is `baton`). */
export const DISTRIBUTION = "baton-lsp";
export const MIN_PYTHON: readonly [number, number] = [3, 11];

export interface ManagedPaths {
  venv: string;
  /** The venv's interpreter. */
  python: string;
  /** The venv's `baton` script: the server command is `[baton, "lsp"]`. */
  baton: string;
}

export function managedPaths(storageDir: string, platform: NodeJS.Platform = process.platform): ManagedPaths {
  const venv = path.join(storageDir, "server-venv");
  const bin = platform === "win32" ? path.join(venv, "Scripts") : path.join(venv, "bin");
  const exe = platform === "win32" ? ".exe" : "";
  return { venv, python: path.join(bin, `python${exe}`), baton: path.join(bin, `baton${exe}`) };
}

/** Interpreters to try, best first: the Python extension's, then the usual names on PATH. */
export function pythonCandidates(pythonExtension: string | undefined, platform: NodeJS.Platform = process.platform): string[][] {
  const out: string[][] = [];
  if (pythonExtension) out.push([pythonExtension]);
  if (platform === "win32") out.push(["py", "-3"], ["python"]);
  else out.push(["python3.13"], ["python3.12"], ["python3.11"], ["python3"], ["python"]);
  return out;
}

/** Printed by a candidate interpreter: its version and whether it can make a venv with pip. */
export const PROBE = "import sys, json, importlib.util as u; print(json.dumps({'version': list(sys.version_info[:3]), 'ensurepip': u.find_spec('ensurepip') is not None}))";

export interface Probe {
  version: [number, number, number];
  ensurepip: boolean;
}

export function readProbe(stdout: string): Probe | undefined {
  try {
    const line = stdout.trim().split("\n").pop() ?? "";
    const v = JSON.parse(line) as { version?: unknown; ensurepip?: unknown };
    const version = v.version;
    if (!Array.isArray(version) || version.length !== 3 || !version.every((n) => typeof n === "number")) return undefined;
    return { version: version as [number, number, number], ensurepip: v.ensurepip === true };
  } catch {
    return undefined;
  }
}

export function recentEnough(p: Probe): boolean {
  const [major, minor] = p.version;
  return major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
}

/** What pip installs: the newest shipped wheel of the server, else the distribution by name. */
export function installSource(shippedFiles: readonly string[], serverDir: string): { spec: string; from: string } {
  const wheels = shippedFiles.filter((f) => /^baton_lsp-[^-]+-.*\.whl$/.test(f)).sort();
  const wheel = wheels[wheels.length - 1];
  if (wheel !== undefined) return { spec: path.join(serverDir, wheel), from: `the wheel shipped with the extension (${wheel})` };
  return { spec: DISTRIBUTION, from: `the package index (${DISTRIBUTION})` };
}

/** The one-line progress text for a line of pip's output, or undefined to keep the last one. */
export function pipProgress(line: string): string | undefined {
  const m = /^\s*(Collecting|Downloading|Installing collected packages:|Building wheel for|Successfully installed)\s*(.*)$/.exec(line);
  if (m === null) return undefined;
  const what = (m[2] ?? "").trim();
  const short = what.length > 60 ? `${what.slice(0, 57)}…` : what;
  return `${m[1]!.replace(/:$/, "")} ${short}`.trim();
}
