// Run colours and labels.
//  - PALETTE: 20 colours, the first six the Okabe–Ito colours (told apart with red-green colour
//    blindness), the rest chosen greedily to be as far as possible (CIEDE2000) from those before,
//    with CIELAB lightness 38–72 so that each reads on a light and a dark background.  Every
//    pair is at least ΔE2000 18 apart (tests/browser/test_charts.py checks >= 15 for 20 runs).
//  - A run's colour comes from a hash of its id, so it is the same on every page; the runs of
//    one page that would share a colour move to the next free one, in id order (so the same
//    set of runs always gets the same colours), and a colour the user picked always wins.
//  - Labels: a run name shown twice on one page gets its id appended.
export const PALETTE = [
  "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#8700e1", "#695a00",
  "#b40f3c", "#96b400", "#695a69", "#a5a596", "#00690f", "#006969", "#9687ff", "#f09687",
  "#f000ff", "#967869", "#2dc3c3", "#ff0f2d",
];

const STORE = "wisp.runColors";

function hash(id: string): number {
  let hsh = 2166136261;
  for (let i = 0; i < id.length; i++) hsh = Math.imul(hsh ^ id.charCodeAt(i), 16777619);
  return hsh >>> 0;
}

/** Colours the user picked, by run id (kept in localStorage). */
export function pickedColors(): Record<string, string> {
  try {
    const v = JSON.parse(localStorage.getItem(STORE) ?? "{}") as unknown;
    return v && typeof v === "object" ? (v as Record<string, string>) : {};
  } catch {
    return {};
  }
}

/** Remember (or, with null, forget) the colour the user picked for a run. */
export function pickColor(id: string, color: string | null): void {
  const all = pickedColors();
  if (color && /^#[0-9a-f]{6}$/i.test(color)) all[id] = color.toLowerCase();
  else delete all[id];
  try {
    localStorage.setItem(STORE, JSON.stringify(all));
  } catch {
    /* private mode: the choice lasts for this page only */
  }
}

/** The palette colour of a run on its own. */
export function runColor(id: string): string {
  return pickedColors()[id] ?? PALETTE[hash(id) % PALETTE.length];
}

/** Colours for the runs of one page: by hash, distinct within the page while the palette lasts. */
export function runColors(ids: string[]): Map<string, string> {
  const picked = pickedColors();
  const out = new Map<string, string>();
  const used = new Set<string>();
  for (const id of ids) if (picked[id]) used.add(picked[id]);
  for (const id of [...new Set(ids)].sort()) {
    if (picked[id]) {
      out.set(id, picked[id]);
      continue;
    }
    let i = hash(id) % PALETTE.length;
    for (let n = 0; n < PALETTE.length && used.has(PALETTE[i]); n++) i = (i + 1) % PALETTE.length;
    used.add(PALETTE[i]);
    out.set(id, PALETTE[i]);
  }
  return out;
}

/** Labels for runs: the name, with the id beside it where two runs of the page share a name. */
/** Labels by the run's key (its id unless another project had the id first). */
export function runLabels(runs: { id: string; key?: string; name?: string | null }[]): Map<string, string> {
  const seen = new Map<string, number>();
  for (const r of runs) {
    const n = r.name || r.id;
    seen.set(n, (seen.get(n) ?? 0) + 1);
  }
  const out = new Map<string, string>();
  for (const r of runs) {
    const n = r.name || r.id;
    out.set(r.key ?? r.id, (seen.get(n) ?? 0) > 1 && n !== r.id ? `${n} (${r.id})` : n);
  }
  return out;
}

/** Line dashes for the metrics of a chart that plots several metrics of several runs. */
export const DASHES: number[][] = [[], [6, 3], [2, 2], [8, 3, 2, 3], [12, 4]];

export function withAlpha(hex: string, a: number): string {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`;
}
