// Bundles the dashboard page into the Python package, where the broker serves it:
//   src/index.html                      → server/baton/surfaces/dashboard/static/index.html
//   src/main.ts (+ uPlot)               → …/static/dashboard.js
//   src/style.css (+ uPlot's css)       → …/static/dashboard.css
// The built files are committed, so a wheel needs no Node; `--check` builds in memory and
// fails when a committed file differs from a fresh build (npm run check, scripts/test).
// `--tests` bundles test/unit/*.test.ts → out/test/ for node's test runner.
import { build } from "esbuild";
import { readFileSync, readdirSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const args = new Set(process.argv.slice(2));
const here = import.meta.dirname;
const target = join(here, "..", "..", "server", "baton", "surfaces", "dashboard", "static");

const BANNER = "/* Baton dashboard: built by clients/dashboard/build.mjs; do not edit. */";

async function bundle() {
  const common = {
    bundle: true,
    write: false,
    minify: true,
    legalComments: "none",
    logLevel: "warning",
    banner: { js: BANNER, css: BANNER },
  };
  const js = await build({
    ...common,
    entryPoints: [join(here, "src", "main.ts")],
    outfile: "dashboard.js",
    format: "iife",
    platform: "browser",
    target: ["chrome110", "firefox110", "safari16"],
  });
  const css = await build({
    ...common,
    entryPoints: [join(here, "src", "style.css")],
    outfile: "dashboard.css",
  });
  return {
    "index.html": readFileSync(join(here, "src", "index.html"), "utf8"),
    "dashboard.js": js.outputFiles[0].text,
    "dashboard.css": css.outputFiles[0].text,
  };
}

if (args.has("--tests")) {
  const tests = readdirSync(join(here, "test", "unit"))
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => join(here, "test", "unit", f));
  await build({
    entryPoints: tests,
    bundle: true,
    outdir: join(here, "out", "test"),
    format: "cjs",
    platform: "node",
    target: "node20",
    sourcemap: "inline",
    logLevel: "warning",
  });
} else {
  const files = await bundle();
  if (args.has("--check")) {
    const stale = Object.entries(files).filter(([name, text]) => {
      let committed = "";
      try {
        committed = readFileSync(join(target, name), "utf8");
      } catch {
        return true;
      }
      return committed !== text;
    });
    if (stale.length > 0) {
      console.error(
        `dashboard: ${stale.map(([n]) => n).join(", ")} in server/baton/surfaces/dashboard/static ` +
          "differ from a fresh build: run `npm run build` in clients/dashboard and commit them",
      );
      process.exit(1);
    }
    console.log("dashboard: the committed bundle is a fresh build");
  } else {
    mkdirSync(target, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(target, name), text);
  }
}
