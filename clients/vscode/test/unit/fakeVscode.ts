/**
 * A stand-in for the `vscode` module in unit tests (esbuild aliases `vscode` to this file):
 * the few classes and functions the status bar and the inline decorations use, recording
 * what they are asked to show.
 */

export class ThemeColor {
  constructor(public readonly id: string) {}
}

export class Position {
  constructor(public readonly line: number, public readonly character: number) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: number | Position, b: number | Position, c?: number, d?: number) {
    this.start = typeof a === "number" ? new Position(a, b as number) : a;
    this.end = typeof a === "number" ? new Position(c!, d!) : (b as Position);
  }
}

export class MarkdownString {
  isTrusted: unknown;
  constructor(public value = "") {}
  appendMarkdown(s: string): this {
    this.value += s;
    return this;
  }
}

export class ThemeIcon {
  constructor(public readonly id: string) {}
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: MarkdownString | string;
  iconPath?: ThemeIcon;
  contextValue?: string;
  command?: { title: string; command: string; arguments?: unknown[] };
  constructor(
    public label: string,
    public collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

export class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  readonly event = (listener: (e: T) => void) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(e: T): void {
    for (const l of this.listeners) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum OverviewRulerLane {
  Left = 1,
  Center = 2,
  Right = 4,
  Full = 7,
}

export interface FakeStatusItem {
  id: string;
  text: string;
  tooltip: unknown;
  backgroundColor: ThemeColor | undefined;
  shown: boolean;
  [k: string]: unknown;
}

export interface FakeEditor {
  document: { uri: { toString(): string }; lineCount: number; lineAt(line: number): { range: { end: Position } } };
  decorations: Map<unknown, { range: Range; hoverMessage?: MarkdownString; renderOptions?: { after?: { contentText?: string } } }[]>;
  setDecorations(type: unknown, options: { range: Range }[]): void;
}

export const recorded = {
  statusItems: [] as FakeStatusItem[],
  context: new Map<string, unknown>(),
  decorationTypes: [] as { options: Record<string, unknown>; disposed: boolean }[],
};

export function fakeEditor(uri: string, lines: string[]): FakeEditor {
  const ed: FakeEditor = {
    document: {
      uri: { toString: () => uri },
      lineCount: lines.length,
      lineAt: (line: number) => ({ range: { end: new Position(line, lines[line]!.length) } }),
    },
    decorations: new Map(),
    setDecorations(type, options) {
      ed.decorations.set(type, options);
    },
  };
  return ed;
}

const noEvent = () => ({ dispose: () => undefined });

export const window = {
  activeTextEditor: undefined as FakeEditor | undefined,
  visibleTextEditors: [] as FakeEditor[],
  createStatusBarItem(id: string): FakeStatusItem {
    const item: FakeStatusItem = { id, text: "", tooltip: undefined, backgroundColor: undefined, shown: false };
    item.show = () => (item.shown = true);
    item.dispose = () => (item.shown = false);
    recorded.statusItems.push(item);
    return item;
  },
  createTextEditorDecorationType(options: Record<string, unknown>) {
    const t = { options, disposed: false, dispose: () => (t.disposed = true) };
    recorded.decorationTypes.push(t);
    return t;
  },
  onDidChangeVisibleTextEditors: noEvent,
  onDidChangeActiveTextEditor: noEvent,
  onDidChangeTextEditorVisibleRanges: noEvent,
  tabGroups: {
    all: [] as { tabs: { input: unknown }[] }[],
    onDidChangeTabs: (listener: (e: { closed: { input: unknown }[] }) => void) => {
      workspaceListeners.tabs.push(listener);
      return { dispose: () => workspaceListeners.tabs.splice(workspaceListeners.tabs.indexOf(listener), 1) };
    },
  },
};

export const commands = {
  executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    if (command === "setContext") recorded.context.set(args[0] as string, args[1]);
    return Promise.resolve(undefined);
  },
};

export class Uri {
  private constructor(
    public readonly scheme: string,
    public readonly path: string,
    public readonly query: string,
  ) {}
  static from(parts: { scheme: string; path?: string; query?: string }): Uri {
    return new Uri(parts.scheme, parts.path ?? "", parts.query ?? "");
  }
  static parse(value: string): Uri {
    const colon = value.indexOf(":");
    return new Uri(value.slice(0, colon), value.slice(colon + 1), "");
  }
  toString(): string {
    return `${this.scheme}:${this.path}${this.query ? `?${this.query}` : ""}`;
  }
}

/** Listeners of workspace and tab events a test fires itself. */
export const workspaceListeners = {
  close: [] as ((doc: unknown) => void)[],
  change: [] as ((e: unknown) => void)[],
  tabs: [] as ((e: { closed: { input: unknown }[] }) => void)[],
};

export class TabInputText {
  constructor(public readonly uri: Uri) {}
}

function listen<T>(list: ((e: T) => void)[]) {
  return (listener: (e: T) => void) => {
    list.push(listener);
    return { dispose: () => list.splice(list.indexOf(listener), 1) };
  };
}

export const workspace = {
  textDocuments: [] as unknown[],
  getConfiguration: () => ({ get: () => undefined }),
  onDidChangeConfiguration: noEvent,
  onDidCloseTextDocument: listen(workspaceListeners.close),
  onDidChangeTextDocument: listen(workspaceListeners.change),
};

export const extensions = {
  getExtension: () => undefined,
};
