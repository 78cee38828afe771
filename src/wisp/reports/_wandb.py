"""A wandb report's spec (the JSON ``wandb_workspaces.reports.v2`` reads and writes) as a wisp
report; what does not map is listed, never dropped in silence (docs/reports.md, "From wandb").

Accepted input: a report view (``{"displayName", "description", "project": {"name",
"entityName"}, "spec": {...} | "<json>"}``) or its bare spec (``{"version": 5, "blocks":
[...]}``).  Blocks map to Markdown (heading, paragraph, list, block-quote, callout,
code-block, markdown-block, latex, horizontal rule, image as a link); a ``panel-grid``
becomes run sets in the front matter (its runsets' filters translated to the filter
language, grouping kept) and one panel per wandb panel: Run History Line Plot -> line,
Bar Chart -> bar, Scalar Chart -> scalar, Scatter Plot -> scatter, Parallel Coordinates
Plot -> parallel, Run Comparer -> compare, Media Browser -> media, Markdown Panel ->
markdown.  Everything else (Vega2, Weave, code comparer, parameter importance, embeds,
panel options with no wisp counterpart) goes to the returned list and, as a quoted note,
into the report where it stood.
"""

from __future__ import annotations

import json
import re
from typing import Any

from wisp.errors import UsageError
from wisp.reports._report import Report

__all__ = ["from_wandb"]

_RUN_FIELDS = {
    "displayName": "name",
    "name": "id",
    "state": "state",
    "createdAt": "created_at",
    "group": "group",
    "jobType": "job_type",
    "notes": "notes",
    "tags": "tags",
}
_OPS = {"=": "=", "==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_X_AXES = {"_step": "step", "Step": "step", "_timestamp": "time", "_runtime": "relative"}
_AREAS = {"minmax": "minmax", "stddev": "std", "none": "none"}
_LINE_OPTIONS = {
    "metrics", "xAxis", "chartTitle", "yLogScale", "xLogScale", "smoothingWeight",
    "smoothingType", "groupAgg", "groupArea", "yAxisMin", "yAxisMax",
}  # fmt: skip


def _text(children: Any) -> str:
    out = []
    for c in children or []:
        if not isinstance(c, dict):
            continue
        kind = c.get("type")
        if kind == "link":
            out.append(f"[{_text(c.get('children'))}]({c.get('url', '')})")
        elif kind == "latex":
            out.append(f"${c.get('content', '')}$")
        elif "children" in c:
            out.append(_text(c["children"]))
        else:
            t = str(c.get("text", ""))
            if c.get("inlineCode"):
                t = f"`{t}`"
            elif c.get("strong"):
                t = f"**{t}**"
            elif c.get("emphasis"):
                t = f"*{t}*"
            out.append(t)
    return "".join(out)


def _field(section: str, name: str) -> str | None:
    if section == "config":
        return "config." + re.sub(r"\.value$", "", name)
    if section == "summary":
        return "summary." + name
    if section == "run":
        return _RUN_FIELDS.get(name)
    return None


def _value(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return {True: "true", False: "false", None: "null"}[v]
    if isinstance(v, int | float):
        return repr(v)
    return json.dumps(str(v))


class _Import:
    def __init__(self) -> None:
        self.unmapped: list[str] = []

    def miss(self, where: str, what: str) -> str:
        self.unmapped.append(f"{where}: {what}")
        return f"\n> *Not imported from wandb: {what}.*\n"

    def filters(self, f: Any, where: str, top: bool = True) -> str:
        """The filter language's text for a wandb filter tree ('' for none)."""
        if not isinstance(f, dict) or f.get("disabled"):
            return ""
        op = f.get("op")
        if op in ("OR", "AND"):
            subs = [x for x in f.get("filters") or [] if isinstance(x, dict)]
            if len(subs) == 1:
                return self.filters(subs[0], where, top)
            parts = [p for p in (self.filters(x, where, False) for x in subs) if p]
            joined = f" {op.lower()} ".join(parts)
            return joined if top or len(parts) < 2 else f"({joined})"
        key = f.get("key") or {}
        section, name = key.get("section", ""), key.get("name", "")
        if section == "tags" and name:
            return f"{'' if f.get('value', True) else 'not '}tags contains {_value(name)}"
        field = _field(section, name)
        if field is None or (op not in _OPS and op not in ("IN", "NIN")):
            self.unmapped.append(f"{where}: filter {section}.{name} {op} {f.get('value')!r}")
            return ""
        if op in ("IN", "NIN"):
            values: list[Any] = f["value"] if isinstance(f.get("value"), list) else [f.get("value")]
            test = "contains" if field == "tags" else "="
            expr = " or ".join(f"{field} {test} {_value(v)}" for v in values) or "false"
            return f"not ({expr})" if op == "NIN" else f"({expr})"
        return f"{field} {_OPS[op]} {_value(f.get('value'))}"

    def runset(self, rs: dict[str, Any], where: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        expr = self.filters(rs.get("filters"), where)
        if expr:
            out["filter"] = expr
        if (rs.get("search") or {}).get("query"):
            self.unmapped.append(f"{where}: name search {rs['search']['query']!r}")
        groups = [_field(k.get("section", ""), k.get("name", "")) for k in rs.get("grouping") or []]
        if groups:
            out["group"] = [g for g in groups if g][:5]
        sel = rs.get("selections") or {}
        if sel.get("tree"):
            self.unmapped.append(f"{where}: runs picked by hand ({len(sel['tree'])})")
        return out


def _axis(name: Any) -> str:
    """A wandb panel's field (``c::lr``, ``config:lr``, ``run:name``, ``loss``) as wisp's."""
    s = str(name or "")
    for prefix, head in (("c::", "config."), ("config:", "config."), ("summary:", "summary.")):
        if s.startswith(prefix):
            return head + re.sub(r"\.value$", "", s[len(prefix) :])
    if s.startswith("run:"):
        return _RUN_FIELDS.get(s[4:], s[4:])
    return s


def _panel(imp: _Import, p: dict[str, Any], where: str) -> dict[str, Any] | None:
    view, c = p.get("viewType"), p.get("config") or {}
    title = c.get("chartTitle")
    spec: dict[str, Any]
    if view == "Run History Line Plot":
        spec = {"type": "line", "y": list(c.get("metrics") or [])[:20]}
        x = c.get("xAxis")
        if x:
            spec["x"] = _X_AXES.get(x, x)
        if c.get("yLogScale"):
            spec["log_y"] = True
        if c.get("xLogScale"):
            spec["log_x"] = True
        if c.get("smoothingWeight"):
            spec["smooth"] = min(0.99, float(c["smoothingWeight"]))
        if c.get("groupAgg") in ("mean", "median"):
            spec["agg"] = c["groupAgg"]
        if c.get("groupArea") in _AREAS:
            spec["band"] = _AREAS[c["groupArea"]]
        for a, b in (("yAxisMin", "y_min"), ("yAxisMax", "y_max")):
            if c.get(a) is not None:
                spec[b] = c[a]
        rest = sorted(k for k, v in c.items() if k not in _LINE_OPTIONS and v not in (None, [], {}))
        if rest:
            imp.unmapped.append(f"{where}: line plot options {', '.join(rest)}")
        if not spec["y"]:
            imp.unmapped.append(f"{where}: a line plot with no metrics")
            return None
    elif view in ("Bar Chart", "Scalar Chart"):
        metrics = list(c.get("metrics") or [])
        if not metrics:
            imp.unmapped.append(f"{where}: a {view} with no metrics")
            return None
        kind = "bar" if view == "Bar Chart" else "scalar"
        spec = {"type": kind, "y": metrics[:20] if kind == "bar" else metrics[0]}
        if c.get("groupAgg") in ("mean", "median", "min", "max"):
            spec["agg"] = c["groupAgg"]
    elif view == "Scatter Plot":
        if not c.get("xAxis") or not c.get("yAxis"):
            imp.unmapped.append(f"{where}: a scatter plot without both axes")
            return None
        spec = {"type": "scatter", "x": _axis(c["xAxis"]), "y": _axis(c["yAxis"])}
        if c.get("zAxis"):
            imp.unmapped.append(f"{where}: scatter z axis {c['zAxis']!r}")
    elif view == "Parallel Coordinates Plot":
        cols = [_axis(col.get("accessor")) for col in c.get("columns") or []]
        if len(cols) < 2:
            imp.unmapped.append(f"{where}: parallel coordinates with fewer than 2 columns")
            return None
        spec = {"type": "parallel", "columns": cols[:20]}
    elif view == "Run Comparer":
        spec = {"type": "compare", "diff_only": bool(c.get("diffOnly"))}
    elif view == "Media Browser":
        keys = list(c.get("mediaKeys") or [])
        if not keys:
            imp.unmapped.append(f"{where}: a media browser with no keys")
            return None
        if len(keys) > 1:
            imp.unmapped.append(f"{where}: media keys after the first: {', '.join(keys[1:])}")
        spec = {"type": "media", "key": keys[0]}
    elif view == "Markdown Panel":
        return {"type": "markdown", "text": str(c.get("value", ""))}
    else:
        imp.unmapped.append(f"{where}: panel {view or 'of unknown type'}")
        return None
    if title:
        spec["title"] = str(title)
    return spec


def _block(imp: _Import, rep: Report, b: dict[str, Any], where: str) -> None:
    kind = b.get("type")
    text = _text(b.get("children"))
    if kind == "heading":
        rep.add_text("#" * max(1, min(6, int(b.get("level") or 1))) + " " + text)
    elif kind == "paragraph":
        if text.strip():
            rep.add_text(text)
    elif kind == "list":
        lines = []
        for i, item in enumerate(b.get("children") or []):
            mark = f"{i + 1}." if (item.get("ordered") or b.get("ordered")) else "-"
            check = {True: "[x] ", False: "[ ] "}.get(item.get("checked"), "")
            lines.append(f"{mark} {check}{_text(item.get('children'))}")
        rep.add_text("\n".join(lines))
    elif kind in ("block-quote", "callout-block"):
        lines = [_text(line.get("children")) for line in b.get("children") or []]
        body = lines if kind == "callout-block" else [text]
        rep.add_text("\n".join(f"> {line}" for line in body))
    elif kind == "code-block":
        lines = [_text(line.get("children")) for line in b.get("children") or []]
        rep.add_text(f"```{b.get('language') or ''}\n" + "\n".join(lines) + "\n```")
    elif kind == "markdown-block":
        rep.add_text(str(b.get("content", "")))
    elif kind in ("latex", "latex-block"):
        rep.add_text(f"$$\n{b.get('content', '')}\n$$")
    elif kind in ("horizontal-rule", "horziontal-rule"):
        rep.add_text("---")
    elif kind == "image":
        rep.add_text(f"[{text or 'image'}]({b.get('url', '')})")
    elif kind == "panel-grid":
        _grid(imp, rep, b.get("metadata") or {}, where)
    else:
        rep.add_text(imp.miss(where, f"a {kind or 'untyped'} block"))


def _grid(imp: _Import, rep: Report, meta: dict[str, Any], where: str) -> None:
    names = []
    sets = [rs for rs in meta.get("runSets") or [] if rs.get("enabled", True)]
    for rs in sets:
        base = re.sub(r"[^\w-]+", "-", str(rs.get("name") or "runs")).strip("-").lower() or "runs"
        name, n = base, 2
        while name in rep.runsets:
            name, n = f"{base}-{n}", n + 1
        spec = imp.runset(rs, f"{where}, run set {rs.get('name')!r}")
        rep.add_runset(name, **spec)
        names.append(name)
    if len(names) > 1:
        imp.unmapped.append(
            f"{where}: {len(names)} run sets drawn together in wandb; each panel here draws "
            f"the first ({names[0]})"
        )
    if not names:
        rep.add_runset(f"grid-{len(rep.runsets) + 1}", filter="")
        names.append(next(reversed(rep.runsets)))
    panels = (meta.get("panelBankSectionConfig") or {}).get("panels") or []
    for i, p in enumerate(panels):
        at = f"{where}, panel {i + 1}"
        pspec = _panel(imp, p, at)
        if pspec is None:
            rep.add_text(imp.miss(at, f"panel {p.get('viewType') or '(unknown)'}"))
            imp.unmapped.pop()  # listed once, by _panel
            continue
        if pspec["type"] != "markdown":
            pspec["runset"] = names[0]
        rep.add_panel(**pspec)


def from_wandb(doc: Any, project: str | None = None) -> tuple[Report, list[str]]:
    """(the wisp report, what did not map) for a wandb report view or spec (a dict or JSON)."""
    if isinstance(doc, str | bytes):
        try:
            doc = json.loads(doc)
        except ValueError as exc:
            raise UsageError(f"a wandb report spec is JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError("a wandb report spec is a JSON object with blocks")
    spec = doc.get("spec", doc)
    if isinstance(spec, str):
        spec = json.loads(spec)
    if not isinstance(spec, dict) or not isinstance(spec.get("blocks"), list):
        raise UsageError("not a wandb report spec: no 'blocks' list (or 'spec' holding one)")
    proj: dict[str, Any] = doc["project"] if isinstance(doc.get("project"), dict) else {}
    name = project or proj.get("name") or ""
    title = str(doc.get("displayName") or doc.get("title") or "Imported from wandb")
    rep = Report(title=title, project=name, description=doc.get("description") or None)
    imp = _Import()
    for i, block in enumerate(spec["blocks"]):
        if isinstance(block, dict):
            _block(imp, rep, block, f"block {i + 1}")
    return rep, imp.unmapped
