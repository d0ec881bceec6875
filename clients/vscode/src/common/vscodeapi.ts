/**
 * The thin wrapper over the `vscode` namespace (as in vscode-python-tools-extension-template):
 * the modules that talk to VS Code go through these functions, and the logic they drive lives
 * in pure modules tested without VS Code.
 */

import * as vscode from "vscode";

import { CONFIG_SECTION } from "./constants";

export function getConfiguration(section = CONFIG_SECTION, scope?: vscode.ConfigurationScope): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(section, scope);
}

export function registerCommand(command: string, callback: (...args: unknown[]) => unknown): vscode.Disposable {
  return vscode.commands.registerCommand(command, callback);
}

export function executeCommand<T = unknown>(command: string, ...rest: unknown[]): Thenable<T> {
  return vscode.commands.executeCommand<T>(command, ...rest);
}

export function setContext(key: string, value: unknown): Thenable<unknown> {
  return vscode.commands.executeCommand("setContext", key, value);
}

export function activeTextEditor(): vscode.TextEditor | undefined {
  return vscode.window.activeTextEditor;
}

export function visibleTextEditors(): readonly vscode.TextEditor[] {
  return vscode.window.visibleTextEditors;
}

export function textDocuments(): readonly vscode.TextDocument[] {
  return vscode.workspace.textDocuments;
}

export function createStatusBarItem(id: string, alignment: vscode.StatusBarAlignment, priority: number): vscode.StatusBarItem {
  return vscode.window.createStatusBarItem(id, alignment, priority);
}

export function createLogOutputChannel(name: string): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel(name, { log: true });
}

export function showInformationMessage(message: string, ...items: string[]): Thenable<string | undefined> {
  return vscode.window.showInformationMessage(message, ...items);
}

export function showWarningMessage(message: string, ...items: string[]): Thenable<string | undefined> {
  return vscode.window.showWarningMessage(message, ...items);
}

export function showErrorMessage(message: string, ...items: string[]): Thenable<string | undefined> {
  return vscode.window.showErrorMessage(message, ...items);
}

export function showInputBox(options: vscode.InputBoxOptions): Thenable<string | undefined> {
  return vscode.window.showInputBox(options);
}

export function showQuickPick<T extends vscode.QuickPickItem>(items: T[], options: vscode.QuickPickOptions): Thenable<T | undefined> {
  return vscode.window.showQuickPick(items, options);
}

export function createQuickPick<T extends vscode.QuickPickItem>(): vscode.QuickPick<T> {
  return vscode.window.createQuickPick<T>();
}

export function onDidChangeConfiguration(listener: (e: vscode.ConfigurationChangeEvent) => unknown): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration(listener);
}

export function getExtension(id: string): vscode.Extension<unknown> | undefined {
  return vscode.extensions.getExtension(id);
}

export function workspaceFolders(): readonly vscode.WorkspaceFolder[] | undefined {
  return vscode.workspace.workspaceFolders;
}

export function registerTreeDataProvider<T>(viewId: string, provider: vscode.TreeDataProvider<T>): vscode.Disposable {
  return vscode.window.registerTreeDataProvider(viewId, provider);
}

export function registerCodeLensProvider(selector: vscode.DocumentSelector, provider: vscode.CodeLensProvider): vscode.Disposable {
  return vscode.languages.registerCodeLensProvider(selector, provider);
}

export function registerTextDocumentContentProvider(scheme: string, provider: vscode.TextDocumentContentProvider): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(scheme, provider);
}

export function onDidChangeTextDocument(listener: (e: vscode.TextDocumentChangeEvent) => unknown): vscode.Disposable {
  return vscode.workspace.onDidChangeTextDocument(listener);
}
