/** The instructions typed into Delegate Selection, newest first, without repeats (pure). */

export class History {
  private items: string[];

  constructor(items: readonly unknown[] = [], private size = 30) {
    this.items = items.filter((i): i is string => typeof i === "string" && i.trim() !== "").slice(0, size);
  }

  add(instruction: string): string[] {
    const text = instruction.trim();
    if (text === "") return this.list();
    this.items = [text, ...this.items.filter((i) => i !== text)].slice(0, this.size);
    return this.list();
  }

  resize(size: number): void {
    this.size = Math.max(0, size);
    this.items = this.items.slice(0, this.size);
  }

  list(): string[] {
    return [...this.items];
  }
}
