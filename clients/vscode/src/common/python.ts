/** The Python interpreter selected in the Python extension (ms-python.python), if any, and
 * a way to hear when it changes. The extension's API is read defensively: it is optional. */

import * as vscode from "vscode";

import { traceInfo } from "./log";
import { getExtension } from "./vscodeapi";

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath?: (resource?: vscode.Uri) => { path: string } | undefined;
    resolveEnvironment?: (env: { path: string } | string) => Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

async function api(): Promise<PythonApi | undefined> {
  const ext = getExtension("ms-python.python");
  if (ext === undefined) return undefined;
  try {
    if (!ext.isActive) await ext.activate();
    return ext.exports as PythonApi;
  } catch (err) {
    traceInfo("the Python extension did not activate:", err);
    return undefined;
  }
}

/** The selected interpreter's executable, or undefined. */
export async function selectedInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const envs = (await api())?.environments;
  const active = envs?.getActiveEnvironmentPath?.(resource);
  if (active === undefined) return undefined;
  try {
    const resolved = await envs?.resolveEnvironment?.(active);
    return resolved?.executable?.uri?.fsPath ?? active.path;
  } catch {
    return active.path;
  }
}

/** Calls ``listener`` when the selected interpreter changes. */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const event = (await api())?.environments?.onDidChangeActiveEnvironmentPath;
  return event ? event(() => listener()) : undefined;
}
