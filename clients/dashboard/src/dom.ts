/** Building the page's DOM from elements and text nodes only: nothing is parsed as HTML, so
 * what an agent wrote can never become markup (and the CSP needs no inline code). */

export type Child = Node | string | number | null | undefined | false;

function append(parent: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.append(typeof c === "number" ? String(c) : c);
  }
}

/** An HTML element with attributes (`class`, `data-*`, …) and children. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) e.setAttribute(k, v);
  append(e, children);
  return e;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element with attributes and children. */
export function svg(tag: string, attrs: Record<string, string | number> = {}, ...children: Child[]): SVGElement {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  append(e, children);
  return e;
}

/** Replace every child of `parent` with `children`. */
export function fill(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** The element with this id; throws when the page lacks it (a build mistake). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`the page has no #${id}`);
  return e as T;
}
