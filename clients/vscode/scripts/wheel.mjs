// Builds the Baton server's wheel (baton-lsp, from the repository's pyproject.toml) into
// server/, where `vsce package` picks it up: the extension installs it when no server is
// found (src/common/install.ts). Uses BATON_PYTHON, else python3, else python.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..", "..");
const out = resolve(here, "..", "server");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const candidates = [process.env.BATON_PYTHON, "python3", "python"].filter(Boolean);
let built = false;
const errors = [];
for (const python of candidates) {
  try {
    execFileSync(python, ["-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", out, root], {
      stdio: ["ignore", "inherit", "pipe"],
    });
    built = true;
    break;
  } catch (err) {
    errors.push(`${python}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
const wheels = readdirSync(out).filter((f) => /^baton_lsp-.*\.whl$/.test(f));
if (!built || wheels.length !== 1) {
  console.error(`wheel.mjs: could not build the baton-lsp wheel into ${out}:\n${errors.join("\n")}`);
  process.exit(1);
}
console.log(`wheel.mjs: ${join("server", wheels[0])}`);
