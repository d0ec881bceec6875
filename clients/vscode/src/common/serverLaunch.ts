/**
 * Which command starts `baton lsp` (pure): the `baton.server.path` setting, else the
 * interpreter from `baton.interpreter` or the Python extension (its `baton` script beside it,
 * else `python -m baton.cli lsp`), else `baton` on PATH, else the server the extension
 * installed into its own storage (common/install). A `baton.server.path` whose program is not
 * an executable file is an error here, before anything is started.
 */

import * as path from "node:path";

import { DISTRIBUTION } from "./installPlan";

export interface ServerLaunch {
  command: string;
  args: string[];
  /** Where the choice came from, for the log. */
  source: string;
}

export interface Lookup {
  /** The Python extension's interpreter, if it is installed and has one. */
  pythonExtension?: string | undefined;
  /** True if ``file`` exists and is executable. */
  isExecutable: (file: string) => boolean;
  /** The full path of ``name`` on PATH, or undefined. */
  which: (name: string) => string | undefined;
  /** The `baton` the extension installed itself, if any. */
  managed?: string | undefined;
}

/** Why nothing was started: ``missing`` (no server anywhere: offer to install one) or a
 * ``badSetting`` the user has to fix. */
export interface NotFound {
  error: string;
  kind: "missing" | "badSetting";
}

function fromInterpreter(python: string, lookup: Lookup, source: string): ServerLaunch {
  const script = path.join(path.dirname(python), process.platform === "win32" ? "baton.exe" : "baton");
  if (lookup.isExecutable(script)) return { command: script, args: ["lsp"], source: `${source} (its baton script)` };
  return { command: python, args: ["-m", "baton.cli", "lsp"], source };
}

export function resolveServerLaunch(
  settings: { serverPath: string[]; interpreter: string },
  lookup: Lookup,
): ServerLaunch | NotFound {
  const [first, ...rest] = settings.serverPath;
  if (first !== undefined) {
    const isPath = first.includes("/") || first.includes("\\");
    const command = isPath ? (lookup.isExecutable(first) ? first : undefined) : lookup.which(first);
    if (command === undefined) {
      return {
        kind: "badSetting",
        error:
          `Baton: baton.server.path runs "${first}", which is ${isPath ? "not an executable file" : "not on PATH"}. ` +
          `Set it to the server's command, e.g. ["/path/to/venv/bin/baton", "lsp"] (the Python package ${DISTRIBUTION}).`,
      };
    }
    return { command, args: rest, source: "setting baton.server.path" };
  }
  if (settings.interpreter) return fromInterpreter(settings.interpreter, lookup, "setting baton.interpreter");
  if (lookup.pythonExtension) {
    const viaExt = fromInterpreter(lookup.pythonExtension, lookup, "the Python extension's interpreter");
    // An interpreter without Baton is no use: prefer a baton found on PATH then.
    if (viaExt.args[0] === "lsp") return viaExt;
    const onPath = lookup.which("baton");
    if (onPath) return { command: onPath, args: ["lsp"], source: "baton on PATH" };
    if (lookup.managed) return { command: lookup.managed, args: ["lsp"], source: MANAGED };
    return viaExt;
  }
  const onPath = lookup.which("baton");
  if (onPath) return { command: onPath, args: ["lsp"], source: "baton on PATH" };
  if (lookup.managed) return { command: lookup.managed, args: ["lsp"], source: MANAGED };
  return {
    kind: "missing",
    error:
      `Baton: no Baton language server found (the Python package ${DISTRIBUTION}: no baton on PATH, ` +
      "no baton.server.path or baton.interpreter). Install it here, into the extension's storage, " +
      `or yourself (pipx install ${DISTRIBUTION}) and set baton.server.path.`,
  };
}

const MANAGED = "the server the extension installed";
