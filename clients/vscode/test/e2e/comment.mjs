// Drives code-server in headless Chromium: delegate a task, accept its first hunk, open a
// comment thread (VS Code's Comments API) on the second and send the comment to the agent;
// the revised result comes back with the accepted hunk kept and the new hunk marked
// "Accept (revised)"; "Step Back to an Earlier Turn…" shows the first turn's result, then the
// second's again, which is accepted. Run by tests/e2e/test_vscode_revision.py; one JSON
// line per step on stdout, a screenshot each.
//
// Env: as harness.mjs; BATON_E2E_INSTRUCTION, BATON_E2E_FILE, BATON_E2E_COMMENT.
import { drive, env } from "./harness.mjs";
import { count } from "./workbench.mjs";

const instruction = env("BATON_E2E_INSTRUCTION");
const file = env("BATON_E2E_FILE");
const comment = env("BATON_E2E_COMMENT");

await drive(async (wb) => {
  const { page, step, palette, waitStatus, activeText, waitActive, ghosts, lensTexts, waitLenses, clickLens } = wb;

  /** Open a comment thread on line ``line`` of the file; its form's buttons. */
  async function openThread(line) {
    await wb.clickEditor();
    await page.keyboard.press("Control+Home");
    for (let i = 1; i < line; i++) await page.keyboard.press("ArrowDown");
    await page.locator(".statusbar-item", { hasText: `Ln ${line},` }).first().waitFor();
    await palette("Comments: Add Comment on Current Selection");
    const widget = page.locator(".review-widget").first();
    await widget.locator(".comment-form").first().waitFor({ state: "visible", timeout: 15000 });
    await widget.getByRole("button", { name: "Send to the Agent" }).first().waitFor();
    return widget.getByRole("button").allInnerTexts();
  }

  /** "Step Back to an Earlier Turn…" to turn ``turn``; wait until the only ghost is ``ghost``. */
  async function stepTo(turn, ghost) {
    await palette("Baton: Step Back to an Earlier Turn…");
    await page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: `Turn ${turn}` }).waitFor();
    await page.keyboard.press("Enter");
    const deadline = Date.now() + 20000;
    let g = await ghosts();
    while (Date.now() < deadline && !(g.length === 1 && g[0] === ghost)) {
      await page.waitForTimeout(100);
      g = await ghosts();
    }
    return g;
  }

  await wb.workbenchIdle();
  await wb.fileOpen(file);

  await step("ready-for-review", async () => {
    await wb.delegate(instruction);
    const status = await waitStatus("ready for review", 30000);
    const lenses = await waitLenses((l) => count(l, "Accept") === 2, "two hunks to review", 20000);
    return { status, lenses, ghosts: await ghosts() };
  });

  await step("first-accepted", async () => {
    await clickLens("Accept");
    const text = await waitActive((t) => /^\s*return 10\s*$/m.test(t), "the accepted hunk");
    const lenses = await waitLenses((l) => count(l, "Accept") === 1, "one hunk left");
    return { text, lenses, ghosts: await ghosts() };
  });

  await step("thread-opened", async () => {
    return { buttons: await openThread(6) }; // line 6: the hunk
  });

  await step("comment-sent", async () => {
    await page.keyboard.type(comment);
    // the form's buttons are enabled once VS Code has seen the text
    const send = page.locator(".review-widget").first().getByRole("button", { name: "Send to the Agent" });
    await page.waitForFunction(() => {
      const b = [...document.querySelectorAll(".review-widget [role=button], .review-widget button")].find((e) => (e.textContent ?? "").includes("Send to the Agent"));
      return !!b && !b.classList.contains("disabled") && b.getAttribute("aria-disabled") !== "true";
    });
    await send.first().click();
    const sent = page.locator(".review-widget .review-comment", { hasText: comment });
    await sent.first().waitFor({ timeout: 15000 });
    return { thread: await page.locator(".review-widget").first().innerText() };
  });

  await step("revised", async () => {
    const lenses = await waitLenses((l) => l.includes("Accept (revised)"), "the revised hunk", 45000);
    const text = await activeText();
    return { lenses, text, ghosts: await ghosts(), status: await waitStatus("ready for review"), threads: await page.locator(".review-widget").count() };
  });

  await step("stepped-back", async () => {
    const g = await stepTo(1, "→ return 20");
    return { ghosts: g, lenses: await lensTexts(), text: await activeText() };
  });

  await step("stepped-forward", async () => {
    const g = await stepTo(2, "→ return 2 * 10");
    return { ghosts: g, lenses: await waitLenses((l) => l.includes("Accept (revised)"), "the revised hunk again", 15000) };
  });

  await step("thread-on-accepted", async () => {
    // the accepted hunk's line (2) takes a thread too: a comment on it is a revision turn
    const buttons = await openThread(2);
    await page.keyboard.press("Escape"); // leave it unsent
    return { buttons };
  });

  await step("revised-accepted", async () => {
    await clickLens("Accept \\(revised\\)");
    const text = await waitActive((t) => /^\s*return 2 \* 10\s*$/m.test(t), "the revised hunk accepted");
    return { text, status: await waitStatus("idle", 20000), lenses: await lensTexts() };
  });
});
