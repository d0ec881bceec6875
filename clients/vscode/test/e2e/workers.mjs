// The worker picker of "Delegate with Options", driven in code-server in headless Chromium:
// its rows are the profiles the server resolved from the user's Baton config (each with its
// provider and model, the default marked, why one cannot run), not a list in the extension's
// settings; picking one delegates to it. A screenshot per step. Run by
// tests/e2e/test_vscode_workers.py.
//
// Env: BATON_E2E_URL, _ARTIFACTS, _PROFILE, _CHROMIUM as drive.mjs; BATON_E2E_FILE (the file
//      to select), BATON_E2E_PICK (the worker to pick), BATON_E2E_INSTRUCTION.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { env, harness } from "./harness.mjs";

const url = env("BATON_E2E_URL");
const artifacts = env("BATON_E2E_ARTIFACTS");
const file = env("BATON_E2E_FILE");
const pick = env("BATON_E2E_PICK");
const instruction = env("BATON_E2E_INSTRUCTION");
mkdirSync(artifacts, { recursive: true });

let page;
const { log, step } = harness(artifacts, () => page);

const STATUS_ID = "baton.baton.baton.status";
const statusLabel = () => page.evaluate((id) => document.getElementById(id)?.getAttribute("aria-label") ?? "", STATUS_ID);

async function waitStatus(part, timeout = 30000) {
  await page.waitForFunction(
    ([id, p]) => (document.getElementById(id)?.getAttribute("aria-label") ?? "").includes(p),
    [STATUS_ID, part],
    { timeout },
  );
  return statusLabel();
}

const clean = (s) => (s ?? "").replace(/\u00a0/g, " ").trim();

/** The rows of the open quick pick: label, description and detail as drawn. */
async function rows() {
  return page.evaluate(() =>
    [...document.querySelectorAll(".quick-input-widget .monaco-list-row")].map((row) => {
      const text = (sel) => (row.querySelector(sel)?.textContent ?? "").replace(/\u00a0/g, " ").trim();
      return {
        label: text(".label-name"),
        description: text(".label-description"),
        text: (row.innerText ?? "").replace(/\u00a0/g, " "),
        aria: row.getAttribute("aria-label") ?? "",
        icon: !!row.querySelector(".label-name .codicon-check"),
      };
    }),
  );
}

/** Move the quick pick's focus to the row whose label is `label`, and take it. */
async function choose(label) {
  const focused = () =>
    page.evaluate(() => (document.querySelector(".quick-input-widget .monaco-list-row.focused .label-name")?.textContent ?? "").replace(/\u00a0/g, " ").trim());
  await page.locator(".quick-input-widget .monaco-list-row.focused").waitFor();
  for (let i = 0; i < 20 && (await focused()) !== label; i++) {
    await page.keyboard.press("ArrowDown");
    await page.waitForTimeout(50);
  }
  if ((await focused()) !== label) throw new Error(`no row "${label}" in the pick: ${JSON.stringify(await rows())}`);
  await page.keyboard.press("Enter");
}

async function palette(command) {
  await page.keyboard.press("Control+Shift+P");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${command}`);
  await page.waitForFunction(
    (c) =>
      [...document.querySelectorAll(".quick-input-widget .monaco-list-row .label-name")].some(
        (e) => (e.textContent ?? "").replace(/\u00a0/g, " ") === c,
      ),
    command,
    { timeout: 10000 },
  );
  await choose(command);
}

const context = await chromium.launchPersistentContext(env("BATON_E2E_PROFILE"), {
  executablePath: process.env.BATON_E2E_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1400, height: 860 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

try {
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20000);

  await step("workbench-idle", async () => {
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ timeout: 30000 });
    return { status: await waitStatus("idle", 60000) };
  });

  await step("file-open", async () => {
    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget input.input");
    await input.waitFor({ state: "visible" });
    await input.fill(file);
    await page.waitForSelector(`.quick-input-widget .monaco-list-row[aria-label*="${file}"]`);
    await page.keyboard.press("Enter");
    await page.locator(`.tab.active[aria-label*="${file}"]`).waitFor();
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+A");
    await page.locator(".editor-instance .monaco-editor .selected-text").first().waitFor();
  });

  await step("worker-picker", async () => {
    await palette("Baton: Delegate with Options (Worker, Model, Kind)…");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: worker" }).waitFor();
    // the rows come from the server's answer: wait until more than "(default)" is drawn
    await page.waitForFunction(() => document.querySelectorAll(".quick-input-widget .monaco-list-row").length > 1);
    await page.waitForTimeout(300); // the list settles (it is drawn once)
    return { rows: await rows() };
  });

  await step("worker-picked", async () => {
    await choose(pick);
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: model" }).waitFor();
    await page.keyboard.press("Enter"); // the worker's default model
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: kind of task" }).waitFor();
    await choose("delegate");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: Delegate" }).waitFor();
    const input = page.locator(".quick-input-widget input.input");
    await input.fill(instruction);
    await page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: instruction }).waitFor();
    await page.keyboard.press("Enter");
  });

  await step("ready-for-review", async () => {
    return { status: await waitStatus("ready for review", 60000) };
  });
  log("done", { status: clean(await statusLabel()) });
} finally {
  await context.close();
}
