/**
 * The review beyond the inline lenses: a hunk's proposed lines shown as lines (peek.ts).
 * Registered by the extension's wiring in one call.
 */

import * as vscode from "vscode";

import { App, run } from "./commands";
import { Command } from "./constants";
import { peekHunk } from "./peek";
import { registerCommand } from "./vscodeapi";

export function registerDiffReview(app: App): vscode.Disposable[] {
  return [registerCommand(Command.peekHunk, (...args: unknown[]) => run("show proposed lines", () => peekHunk(app, args[0])))];
}
