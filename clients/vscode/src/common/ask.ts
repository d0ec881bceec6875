/** "Ask Baton…": a read-only question about the selection, the server's `baton.ask`. The code
 * action (and the editor's context menu, the command palette) carry no question: it is asked
 * for in an input box here. A cheap worker answers it, changing nothing; the server shows the
 * answer (a markdown document beside the code, or an information message). */

import * as vscode from "vscode";

import type { App } from "./commands";
import { traceError, traceInfo } from "./log";
import { activeTextEditor, registerCommand } from "./vscodeapi";

export const ASK = "baton.client.ask";

interface Position {
  line: number;
  character: number;
}

/** The argument of `baton.ask` (its code action's, without `question`). */
export interface AskArgs {
  uri: string;
  range?: { start: Position; end: Position };
  question?: string;
}

export function isAskArgs(value: unknown): value is AskArgs {
  return typeof value === "object" && value !== null && typeof (value as AskArgs).uri === "string";
}

/** "app.py:3-5" (1-based, inclusive: a range ending at column 0 ends on the line before). */
export function where(args: AskArgs): string {
  const name = args.uri.split("/").pop() ?? args.uri;
  if (args.range === undefined) return name;
  const { start, end } = args.range;
  const last = end.character === 0 && end.line > start.line ? end.line - 1 : end.line;
  return `${name}:${start.line + 1}-${last + 1}`;
}

/** Ask for the question (unless given), then send `baton.ask`: the task id, or undefined
 * when the user gave none. */
export async function ask(
  app: Pick<App, "server">,
  args: AskArgs,
  prompt: (where: string) => Thenable<string | undefined>,
): Promise<string | undefined> {
  const question = args.question ?? (await prompt(where(args)));
  if (question === undefined || question.trim() === "") return undefined;
  const result = await app.server.request<{ taskId: string | null }>("baton.ask", { ...args, question });
  return result.taskId ?? undefined;
}

function fromEditor(): AskArgs | undefined {
  const editor = activeTextEditor();
  if (editor === undefined || editor.document.uri.scheme !== "file") return undefined;
  const s = editor.selection;
  const range = {
    start: { line: s.start.line, character: s.start.character },
    end: { line: s.end.line, character: s.end.character },
  };
  return { uri: editor.document.uri.toString(), range };
}

export function registerAsk(app: App): vscode.Disposable[] {
  const prompt = (at: string): Thenable<string | undefined> =>
    vscode.window.showInputBox({
      title: `Baton: ask about ${at}`,
      prompt: "A cheap worker answers, changing nothing",
      placeHolder: "What does this code do?",
      ignoreFocusOut: true,
    });
  return [
    registerCommand(ASK, async (arg: unknown) => {
      const args = isAskArgs(arg) ? arg : fromEditor();
      if (args === undefined) {
        void vscode.window.showWarningMessage("Baton: open a file to ask about it");
        return;
      }
      try {
        const id = await ask(app, args, prompt);
        if (id !== undefined) traceInfo(`asked ${id} about ${where(args)}`);
      } catch (err) {
        traceError(`ask: ${String(err)}`);
        void vscode.window.showErrorMessage(`Baton: ask: ${err instanceof Error ? err.message : String(err)}`);
      }
    }),
  ];
}
