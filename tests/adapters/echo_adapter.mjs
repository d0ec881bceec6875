// A worker in another language than Baton's: a small Node program speaking Baton's adapter
// protocol (docs/reference/adapter-protocol.md). It does what the prompt names, plainly:
// "Create NAME" writes NAME; "ask me" asks a question; "at length" works for a long while.
import { randomUUID } from "node:crypto";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const say = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const fail = (message) => {
  say({ type: "error", kind: "worker_error", message });
  process.exitCode = 2;
};

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  let start;
  try {
    start = JSON.parse(input.split("\n")[0]);
  } catch {
    return fail("the start line is not JSON");
  }
  if (start.type !== "start" || start.protocol !== 1) {
    return fail(`unsupported start: protocol ${start.protocol}`);
  }
  const session = start.session ?? randomUUID();
  say({ type: "session", id: session });
  const prompt = String(start.prompt);
  if (/ask me/i.test(prompt)) {
    say({ type: "question", text: "Which file should I change?" });
    return;
  }
  if (/at length/i.test(prompt)) {
    say({ type: "text", text: "Thinking it through...\n" });
    spawn("sleep", ["60"], { stdio: "ignore" }); // a child of its own: cancel must stop it too
    setTimeout(() => say({ type: "final", text: "done thinking" }), 60_000);
    return;
  }
  const created = /Create (\S+)/.exec(prompt);
  if (created) {
    const name = created[1].replace(/[.,;]$/, "");
    say({ type: "tool", name: "write", files: [name], input: name });
    writeFileSync(join(start.cwd, name), "hello from node\n");
    say({ type: "tool_result", name: "write", ok: true, output: `wrote ${name}` });
  }
  say({ type: "text", text: start.reason === "first" ? "Done.\n" : "Went on.\n" });
  say({ type: "usage", input: 1200, cached: 200, output: 34 });
  say({ type: "final", text: created ? `created ${created[1]}` : "ready" });
});
