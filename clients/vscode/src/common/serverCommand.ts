/**
 * Which command starts `baton lsp` (pure): the `baton.server.path` setting, else the
 * interpreter from `baton.interpreter` or the Python extension (its `baton` script beside it,
 * else `python -m baton.cli lsp`), else `baton` on PATH.
 */

import * as path from "node:path";

export interface ServerCommand {
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
}

function fromInterpreter(python: string, lookup: Lookup, source: string): ServerCommand {
  const script = path.join(path.dirname(python), process.platform === "win32" ? "baton.exe" : "baton");
  if (lookup.isExecutable(script)) return { command: script, args: ["lsp"], source: `${source} (its baton script)` };
  return { command: python, args: ["-m", "baton.cli", "lsp"], source };
}

export function resolveServerCommand(
  settings: { serverPath: string[]; interpreter: string },
  lookup: Lookup,
): ServerCommand | { error: string } {
  const [first, ...rest] = settings.serverPath;
  if (first !== undefined) return { command: first, args: rest, source: "setting baton.server.path" };
  if (settings.interpreter) return fromInterpreter(settings.interpreter, lookup, "setting baton.interpreter");
  if (lookup.pythonExtension) {
    const viaExt = fromInterpreter(lookup.pythonExtension, lookup, "the Python extension's interpreter");
    // An interpreter without Baton is no use: prefer a baton found on PATH then.
    if (viaExt.args[0] === "lsp") return viaExt;
    const onPath = lookup.which("baton");
    if (onPath) return { command: onPath, args: ["lsp"], source: "baton on PATH" };
    return viaExt;
  }
  const onPath = lookup.which("baton");
  if (onPath) return { command: onPath, args: ["lsp"], source: "baton on PATH" };
  return {
    error:
      "Baton: could not find the Baton language server. Install Baton (pip install baton) in the " +
      "Python interpreter selected in the Python extension, or set baton.server.path " +
      '(e.g. ["/path/to/venv/bin/baton", "lsp"]) or baton.interpreter.',
  };
}
