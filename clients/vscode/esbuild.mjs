// Bundles the extension (src/extension.ts → dist/extension.js) and, with --tests, each unit
// test (test/unit/*.test.ts → out/test/*.test.js) for node's test runner.
import { build, context } from "esbuild";
import { readdirSync } from "node:fs";

const args = new Set(process.argv.slice(2));
const production = args.has("--production");

const extension = {
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  external: ["vscode"],
  format: "cjs",
  platform: "node",
  target: "node20",
  sourcemap: !production,
  minify: production,
  logLevel: "warning",
};

if (args.has("--tests")) {
  const tests = readdirSync("test/unit")
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => `test/unit/${f}`);
  await build({
    entryPoints: tests,
    bundle: true,
    outdir: "out/test",
    // The unit tests run without VS Code: `vscode` is a recording stand-in.
    alias: { vscode: "./test/unit/fakeVscode.ts" },
    format: "cjs",
    platform: "node",
    target: "node20",
    sourcemap: "inline",
    logLevel: "warning",
  });
} else if (args.has("--watch")) {
  const ctx = await context(extension);
  await ctx.watch();
} else {
  await build(extension);
}
