// Which metric keys a page leads with, and in what order (run page, compare, workspace):
// keys are grouped into sections by their prefix ("train/loss" -> "train"); the section of
// ungrouped scalars comes first, then the sections of scalars (alphabetical), then sections
// holding only media and plots, then system metrics.  Within a section scalars come first.

/** The section of a key: its prefix up to the last "/" ("" for an ungrouped key). */
export function sectionOf(key: string): string {
  const i = key.lastIndexOf("/");
  return i > 0 ? key.slice(0, i) : "";
}

function rank(section: string, keys: string[], media: Record<string, string>): number {
  if (section === "system" || section.startsWith("system/")) return 3;
  if (!keys.some((k) => !media[k])) return 2;
  return section === "" ? 0 : 1;
}

/** Keys in sections, in display order: [section, keys][] (empty sections left out). */
export function sections(keys: string[], media: Record<string, string> = {}): [string, string[]][] {
  const by = new Map<string, string[]>();
  for (const k of keys) {
    const s = sectionOf(k);
    const list = by.get(s);
    if (list) list.push(k);
    else by.set(s, [k]);
  }
  const out = [...by.entries()].map(([s, ks]): [string, string[], number] => [
    s,
    [...ks].sort((a, b) => Number(!!media[a]) - Number(!!media[b]) || a.localeCompare(b)),
    rank(s, ks, media),
  ]);
  out.sort((a, b) => a[2] - b[2] || a[0].localeCompare(b[0]));
  return out.map(([s, ks]) => [s, ks]);
}

/** The keys of `sections` flattened: the order a page shows them in. */
export function orderKeys(keys: string[], media: Record<string, string> = {}): string[] {
  return sections(keys, media).flatMap(([, ks]) => ks);
}

interface KeyedRun {
  metric_keys: string[];
  media_keys?: Record<string, string> | null;
}

/** A run's scalar metric keys: not media, not system, not internal ("_..."). */
export function scalarKeys(run: KeyedRun): string[] {
  const media = run.media_keys ?? {};
  return run.metric_keys.filter((k) => !media[k] && !k.startsWith("_") && sectionOf(k) !== "system" && !k.startsWith("system/"));
}

/**
 * The scalar keys the runs share: those logged by at least half of the runs that log any
 * scalar (a data-preparation run with no metrics does not empty the list; a key only one
 * run of many logged does not fill it), in display order.
 */
export function sharedScalarKeys(runs: KeyedRun[]): string[] {
  const per = runs.map(scalarKeys).filter((ks) => ks.length);
  const count = new Map<string, number>();
  for (const ks of per) for (const k of new Set(ks)) count.set(k, (count.get(k) ?? 0) + 1);
  const need = Math.max(1, Math.ceil(per.length / 2));
  return orderKeys([...count].filter(([, n]) => n >= need).map(([k]) => k));
}
