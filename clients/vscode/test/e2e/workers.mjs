// The worker picker of "Delegate with Options", driven in code-server in headless Chromium:
// its rows are the profiles the server resolved from the user's Baton config (each with its
// provider and model, the default marked, why one cannot run), not a list in the extension's
// settings; picking one delegates to it. A screenshot per step. Run by
// tests/e2e/test_vscode_workers.py.
//
// Env: as harness.mjs; BATON_E2E_FILE (the file to select), BATON_E2E_PICK (the worker to
//      pick), BATON_E2E_INSTRUCTION.
import { drive, env } from "./harness.mjs";
import { clean } from "./workbench.mjs";

const file = env("BATON_E2E_FILE");
const pick = env("BATON_E2E_PICK");
const instruction = env("BATON_E2E_INSTRUCTION");

await drive(async (wb) => {
  const { page, step, palette, choose, statusLabel, waitStatus } = wb;
  const title = (text) => page.locator(".quick-input-widget .quick-input-title", { hasText: text }).waitFor();

  await wb.workbenchIdle(60000);

  await step("file-open", async () => {
    await wb.openFile(file);
    await wb.selectAll();
  });

  await step("worker-picker", async () => {
    await palette("Baton: Delegate with Options (Worker, Model, Kind)…");
    await title("Baton: worker");
    // the rows come from the server's answer: wait until more than "(default)" is drawn
    await page.waitForFunction(() => document.querySelectorAll(".quick-input-widget .monaco-list-row").length > 1);
    await page.waitForTimeout(300); // the list settles (it is drawn once)
    return { rows: await wb.pickRows() };
  });

  await step("worker-picked", async () => {
    await choose(pick);
    await title("Baton: model");
    await page.keyboard.press("Enter"); // the worker's default model
    await title("Baton: kind of task");
    await choose("delegate");
    await wb.typeInstruction(instruction);
    await page.keyboard.press("Enter");
  });

  await step("ready-for-review", async () => {
    return { status: await waitStatus("ready for review", 60000) };
  });
  return { status: clean(await statusLabel()) };
});
