/**
 * Installs the Baton server into the extension's global storage when none is found: finds a
 * Python ≥ 3.11, makes a virtual environment, and pip-installs `baton-lsp` (the shipped
 * wheel, else the index), reporting each step in a progress notification. The plan (paths,
 * candidates, what to install) is the pure module installPlan.
 */

import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";

import { traceError, traceInfo } from "./log";
import {
  DISTRIBUTION,
  MIN_PYTHON,
  ManagedPaths,
  PROBE,
  installSource,
  managedPaths,
  pipProgress,
  pythonCandidates,
  readProbe,
  recentEnough,
} from "./installPlan";

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs ``argv``, giving each output line to ``onLine``; never throws (a spawn error is code null). */
function run(argv: string[], onLine?: (line: string) => void, timeoutMs = 15 * 60_000): Promise<Ran> {
  return new Promise((resolve) => {
    const [command, ...args] = argv;
    let stdout = "";
    let stderr = "";
    let settled = false;
    const done = (code: number | null, extra = ""): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ code, stdout, stderr: stderr + extra });
    };
    const child = spawn(command!, args, { env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1" }, windowsHide: true });
    const timer = setTimeout(() => {
      child.kill();
      done(null, `\ntimed out after ${timeoutMs / 1000} s`);
    }, timeoutMs);
    const lines = (chunk: Buffer, into: "stdout" | "stderr"): void => {
      const text = chunk.toString();
      if (into === "stdout") stdout += text;
      else stderr += text;
      for (const line of text.split(/\r?\n/)) if (line.trim()) onLine?.(line);
    };
    child.stdout.on("data", (c: Buffer) => lines(c, "stdout"));
    child.stderr.on("data", (c: Buffer) => lines(c, "stderr"));
    child.on("error", (err) => done(null, String(err)));
    child.on("close", (code) => done(code));
  });
}

export class InstallError extends Error {}

export class ServerInstaller {
  readonly paths: ManagedPaths;
  private installing: Promise<string> | undefined;

  constructor(
    storageDir: string,
    private readonly extensionDir: string,
    private readonly pythonExtension: () => Promise<string | undefined>,
  ) {
    this.paths = managedPaths(storageDir);
  }

  /** The installed server's `baton`, if the extension installed one. */
  installed(): string | undefined {
    try {
      fs.accessSync(this.paths.baton, fs.constants.X_OK);
      return this.paths.baton;
    } catch {
      return undefined;
    }
  }

  /** The shipped wheel's file name, if the .vsix has one. */
  private shippedWheel(): string | undefined {
    const serverDir = path.join(this.extensionDir, "server");
    const shipped = fs.existsSync(serverDir) ? fs.readdirSync(serverDir) : [];
    const source = installSource(shipped, serverDir);
    return source.spec === DISTRIBUTION ? undefined : path.basename(source.spec);
  }

  private get stamp(): string {
    return path.join(this.paths.venv, "baton-installed-from");
  }

  /** True when the installed server came from another wheel than the one this version of the
   * extension ships (the extension was updated): it is installed again before it starts. */
  outdated(): boolean {
    const wheel = this.shippedWheel();
    if (wheel === undefined || this.installed() === undefined) return false;
    try {
      return fs.readFileSync(this.stamp, "utf8").trim() !== wheel;
    } catch {
      return true;
    }
  }

  /** Install (once at a time) with a progress notification; resolves to the `baton` path. */
  install(): Promise<string> {
    this.installing ??= Promise.resolve(
      vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: "Baton: installing the server", cancellable: false },
        (progress) => this.doInstall((message) => progress.report({ message })),
      ),
    ).finally(() => (this.installing = undefined));
    return this.installing;
  }

  private async findPython(say: (m: string) => void): Promise<string[]> {
    say(`looking for Python ${MIN_PYTHON.join(".")} or later…`);
    const tried: string[] = [];
    for (const argv of pythonCandidates(await this.pythonExtension())) {
      const ran = await run([...argv, "-c", PROBE], undefined, 30_000);
      const probe = ran.code === 0 ? readProbe(ran.stdout) : undefined;
      if (probe === undefined) continue;
      tried.push(`${argv.join(" ")} (${probe.version.join(".")})`);
      if (!recentEnough(probe)) continue;
      if (!probe.ensurepip) {
        throw new InstallError(
          `Baton: ${argv.join(" ")} (Python ${probe.version.join(".")}) cannot make a virtual environment with pip ` +
            "(on Debian and Ubuntu: install the python3-venv package), then run Baton: Install Server again.",
        );
      }
      traceInfo(`installing the server with ${argv.join(" ")} (Python ${probe.version.join(".")})`);
      return argv;
    }
    throw new InstallError(
      `Baton: no Python ${MIN_PYTHON.join(".")} or later found to install the server ` +
        `(${tried.length > 0 ? `found only ${tried.join(", ")}` : "none on PATH"}). Install Python ${MIN_PYTHON.join(".")}+, ` +
        `or install ${DISTRIBUTION} yourself (pipx install ${DISTRIBUTION}) and set baton.server.path.`,
    );
  }

  private async doInstall(say: (m: string) => void): Promise<string> {
    const python = await this.findPython(say);
    const { venv, python: venvPython } = this.paths;
    say("creating a virtual environment…");
    fs.rmSync(venv, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(venv), { recursive: true });
    const made = await run([...python, "-m", "venv", venv], (l) => traceInfo(`venv: ${l}`));
    if (made.code !== 0) throw new InstallError(`Baton: could not create a virtual environment in ${venv}: ${made.stderr.trim().slice(-500)}`);
    const serverDir = path.join(this.extensionDir, "server");
    const shipped = fs.existsSync(serverDir) ? fs.readdirSync(serverDir) : [];
    const source = installSource(shipped, serverDir);
    say(`installing ${DISTRIBUTION} from ${source.from}…`);
    traceInfo(`installing ${DISTRIBUTION} from ${source.from}: pip install ${source.spec}`);
    const pip = await run([venvPython, "-m", "pip", "install", "--upgrade", source.spec], (line) => {
      traceInfo(`pip: ${line}`);
      const p = pipProgress(line);
      if (p !== undefined) say(p);
    });
    if (pip.code !== 0) {
      traceError(`pip install failed (${pip.code}):`, pip.stderr);
      throw new InstallError(
        `Baton: pip could not install ${DISTRIBUTION}: ${pip.stderr.trim().split("\n").slice(-3).join(" ").slice(-400)} (Baton: Show Log has the whole output).`,
      );
    }
    const baton = this.installed();
    if (baton === undefined) throw new InstallError(`Baton: ${DISTRIBUTION} was installed but ${this.paths.baton} is missing.`);
    fs.writeFileSync(this.stamp, `${path.basename(source.spec)}\n`);
    say("starting the server…");
    return baton;
  }
}
