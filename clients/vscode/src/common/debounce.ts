/**
 * Debounced calls: a burst of `schedule` calls runs the action once, `delayMs` after the last
 * of them. {@link KeyedDebounce} keeps one timer per key (a task, a document), {@link Debounce}
 * one for all, run with the latest value given.
 */

type Timer = ReturnType<typeof setTimeout>;

export class KeyedDebounce<K> {
  private readonly timers = new Map<K, Timer>();

  constructor(
    private readonly delayMs: number,
    private readonly run: (key: K) => void,
  ) {}

  /** Run the action for `key` in `delayMs`, replacing one already scheduled for it. */
  schedule(key: K): void {
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        this.run(key);
      }, this.delayMs),
    );
  }

  /** Whether an action for `key` is waiting. */
  pending(key: K): boolean {
    return this.timers.has(key);
  }

  /** Drop every action still waiting. */
  dispose(): void {
    this.timers.forEach((t) => clearTimeout(t));
    this.timers.clear();
  }
}

export class Debounce<T> {
  private timer: Timer | undefined;

  constructor(
    private readonly delayMs: number,
    private readonly run: (value: T) => void,
  ) {}

  /** Run the action with `value` in `delayMs`, replacing the one already scheduled. */
  schedule(value: T): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.run(value);
    }, this.delayMs);
  }

  /** Drop the action still waiting, if any. */
  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
