"""A report as one self-contained HTML file: prose, panels drawn as inline SVG, data inlined.

The file fetches nothing and runs no script: charts are SVG drawn here, images are ``data:``
URIs, and the panel data (``_data.resolve``, as the dashboard would draw it) is inlined as
``<script type="application/json" id="wisp-report-data">`` for whoever wants the numbers.
Run colours follow the dashboard's rule (``web/src/colors.ts``: a 20-colour palette by FNV-1a
hash of the run id, distinct within the report while the palette lasts), so a run keeps its
colour between the dashboard and the export.  Printing the page to PDF keeps the charts.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any, cast

from wisp.reports._markdown import to_html

__all__ = ["colors", "render"]

PALETTE = (
    "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#8700e1", "#695a00",
    "#b40f3c", "#96b400", "#695a69", "#a5a596", "#00690f", "#006969", "#9687ff", "#f09687",
    "#f000ff", "#967869", "#2dc3c3", "#ff0f2d",
)  # fmt: skip
W, H, PAD_L, PAD_R, PAD_T, PAD_B = 640, 260, 56, 12, 10, 28
_CSS = """
body{font:15px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1f;margin:0;
background:#fafafa}main{max-width:960px;margin:0 auto;padding:24px 28px 64px;background:#fff}
h1.title{margin-bottom:4px}.meta{color:#666;font-size:13px;margin-bottom:18px}
.panel{border:1px solid #e3e3e3;border-radius:6px;padding:10px 12px;margin:16px 0;
break-inside:avoid}.panel h3{margin:0 0 6px;font-size:14px}svg{max-width:100%;height:auto}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:#333}
.legend i{display:inline-block;width:12px;height:3px;margin-right:5px;vertical-align:middle}
table{border-collapse:collapse;font-size:13px;margin:6px 0}td,th{border:1px solid #e3e3e3;
padding:3px 8px;text-align:left}th{background:#f4f4f4}.scalar{font-size:40px;font-weight:600}
.muted{color:#777;font-size:12px}pre{background:#f4f4f4;padding:8px;overflow:auto}
.media{display:flex;flex-wrap:wrap;gap:10px}.media figure{margin:0;font-size:12px}
.media img{max-width:220px;display:block}.media video{max-width:320px;display:block}
.media iframe{width:420px;height:260px;border:1px solid #e3e3e3;display:block}
.media figure{max-width:100%;overflow:auto}
"""


def _hash(s: str) -> int:
    h = 2166136261
    for ch in s:  # run ids are ASCII: one UTF-16 unit each, as charCodeAt reads them
        h = ((h ^ ord(ch)) * 16777619) & 0xFFFFFFFF
    return h


def colors(ids: list[str]) -> dict[str, str]:
    """Each id's colour: by hash, distinct within ``ids`` while the palette lasts."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for rid in sorted(set(ids)):
        i = _hash(rid) % len(PALETTE)
        for _ in range(len(PALETTE)):
            if PALETTE[i] not in used:
                break
            i = (i + 1) % len(PALETTE)
        used.add(PALETTE[i])
        out[rid] = PALETTE[i]
    return out


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        return f"{v:.2e}"
    return f"{v:.4g}"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


class _Axes:
    """Maps data to pixels on one panel's plot area (log scales where asked and possible)."""

    def __init__(self, xs: list[float], ys: list[float], log_x: bool, log_y: bool) -> None:
        self.log_x = log_x and all(v > 0 for v in xs)
        self.log_y = log_y and all(v > 0 for v in ys)
        # the log of the extremes is the extreme of the logs: two calls, not one per value
        self.x0, self.x1 = (
            (self._t(min(xs), self.log_x), self._t(max(xs), self.log_x)) if xs else (0.0, 0.0)
        )
        self.y0, self.y1 = (
            (self._t(min(ys), self.log_y), self._t(max(ys), self.log_y)) if ys else (0.0, 0.0)
        )
        if self.x1 == self.x0:
            self.x1 = self.x0 + 1
        if self.y1 == self.y0:
            self.y0, self.y1 = self.y0 - 0.5, self.y1 + 0.5

    @staticmethod
    def _t(v: float, log: bool) -> float:
        return math.log10(v) if log else v

    def px(self, v: float) -> float:
        f = (self._t(v, self.log_x) - self.x0) / (self.x1 - self.x0)
        return PAD_L + f * (W - PAD_L - PAD_R)

    def py(self, v: float) -> float:
        f = (self._t(v, self.log_y) - self.y0) / (self.y1 - self.y0)
        return H - PAD_B - f * (H - PAD_T - PAD_B)

    def grid(self, xlabel: str) -> str:
        parts = [f'<rect x="{PAD_L}" y="{PAD_T}" width="{W - PAD_L - PAD_R}" '
                 f'height="{H - PAD_T - PAD_B}" fill="none" stroke="#ddd"/>']  # fmt: skip
        for t in _ticks(self.y0, self.y1):
            v = 10**t if self.log_y else t
            y = self.py(v)
            parts.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{y:.1f}" y2="{y:.1f}" '
                         f'stroke="#eee"/><text x="{PAD_L - 4}" y="{y + 4:.1f}" '
                         f'text-anchor="end">{_fmt(v)}</text>')  # fmt: skip
        for t in _ticks(self.x0, self.x1):
            v = 10**t if self.log_x else t
            x = self.px(v)
            parts.append(f'<text x="{x:.1f}" y="{H - PAD_B + 14}" text-anchor="middle">'
                         f"{_fmt(v)}</text>")  # fmt: skip
        parts.append(f'<text x="{W - PAD_R}" y="{H - 2}" text-anchor="end">{html.escape(xlabel)}'
                     "</text>")  # fmt: skip
        return "".join(parts)


def _svg(body: str, label: str) -> str:
    return (f'<svg viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
            f'aria-label="{html.escape(label)}" font-size="11" fill="#555" '
            f'xmlns="http://www.w3.org/2000/svg">{body}</svg>')  # fmt: skip


def _smooth(ys: list[float | None], alpha: float) -> list[float | None]:
    """wandb's debiased exponential moving average (the dashboard's ``ema`` smoothing)."""
    out: list[float | None] = []
    last, n = 0.0, 0
    for y in ys:
        if y is None or not math.isfinite(y):
            out.append(None)
            continue
        last = last * alpha + (1 - alpha) * y
        n += 1
        out.append(last / (1 - alpha**n))
    return out


def _path(pts: list[tuple[float, float | None]], ax: _Axes) -> str:
    """SVG path data through the points (a gap where y is missing, not finite or, on a log
    axis, not positive); the axes' mapping inlined, as this is the export's hot loop."""
    log10, isfinite = math.log10, math.isfinite
    sx = (W - PAD_L - PAD_R) / (ax.x1 - ax.x0)
    sy = (H - PAD_T - PAD_B) / (ax.y1 - ax.y0)
    x0, y0, bottom = ax.x0, ax.y0, H - PAD_B
    lx, ly = ax.log_x, ax.log_y
    ys = [y for _, y in pts]
    if pts and not (lx or ly) and None not in ys:
        whole = cast("list[float]", ys)
        if isfinite(sum(whole)):  # no gap: one comprehension
            xs = [x for x, _ in pts]
            return "M" + " L".join(
                [
                    f"{PAD_L + (x - x0) * sx:.1f},{bottom - (y - y0) * sy:.1f}"
                    for x, y in zip(xs, whole, strict=True)
                ]
            )
    d: list[str] = []
    pen = "M"
    for x, y in pts:
        if y is None or not isfinite(y) or (ly and y <= 0) or (lx and x <= 0):
            pen = "M"
            continue
        px = PAD_L + ((log10(x) if lx else x) - x0) * sx
        py = bottom - ((log10(y) if ly else y) - y0) * sy
        d.append(f"{pen}{px:.1f},{py:.1f}")
        pen = "L"
    return " ".join(d)


def _legend(items: list[tuple[str, str]]) -> str:
    spans = "".join(
        f'<span><i style="background:{c}"></i>{html.escape(label)}</span>' for label, c in items
    )
    return f'<div class="legend">{spans}</div>'


def _line(p: dict[str, Any], cols: dict[str, str]) -> str:
    lines = p["lines"]
    if not lines:
        return '<p class="muted">no runs selected, or none logs these metrics</p>'
    xs = [float(x) for ln in lines for x in ln["x"]]
    ys = [
        float(v)
        for ln in lines
        for k in ("y", "min", "max")
        for v in (ln[k] or [])
        if v is not None and math.isfinite(v)
    ]
    if p.get("y_min") is not None:
        ys.append(p["y_min"])
    if p.get("y_max") is not None:
        ys.append(p["y_max"])
    ax = _Axes(xs, ys, bool(p.get("log_x")), bool(p.get("log_y")))
    body = [ax.grid(p.get("x", "step"))]
    legend = []
    alpha = float(p.get("smooth") or 0.0)
    dashes = {
        k: "" if j == 0 else f' stroke-dasharray="{2 + 2 * j},3"' for j, k in enumerate(p["y"])
    }
    for i, ln in enumerate(lines):
        color = cols.get(ln.get("run") or ",".join(ln.get("runs", [])), PALETTE[i % len(PALETTE)])
        legend.append((ln["label"], color))
        if ln["min"] is not None and ln["max"] is not None and ln["min"] != ln["y"]:
            up = [(x, v) for x, v in zip(ln["x"], ln["max"], strict=True) if v is not None]
            down = [(x, v) for x, v in zip(ln["x"], ln["min"], strict=True) if v is not None]
            band = _path(up + down[::-1], ax)
            if band:
                body.append(
                    f'<path d="{band} Z" fill="{color}" fill-opacity="0.15" stroke="none"/>'
                )
        raw = _path(list(zip(ln["x"], ln["y"], strict=True)), ax)
        shown = raw
        if alpha > 0:
            body.append(f'<path d="{raw}" fill="none" stroke="{color}" stroke-opacity="0.25"/>')
            shown = _path(list(zip(ln["x"], _smooth(ln["y"], alpha), strict=True)), ax)
        attrs = f'stroke="{color}" stroke-width="1.5"{dashes.get(ln["key"], "")}'
        run = html.escape(ln.get("run", ""))
        body.append(
            f'<path class="line" d="{shown}" fill="none" {attrs} data-run="{run}">'
            f"<title>{html.escape(ln['label'])}</title></path>"
        )
    return _svg("".join(body), p.get("title") or ", ".join(p["y"])) + _legend(legend)


def _bar(p: dict[str, Any], cols: dict[str, str]) -> str:
    bars = p["bars"]
    if not bars:
        return '<p class="muted">no run has these summary values</p>'
    vals = [b["value"] for b in bars]
    lo, hi = min(0.0, *vals), max(0.0, *vals)
    span = (hi - lo) or 1.0
    row, left = 22, 200
    h = row * len(bars) + 8
    out = []
    for i, b in enumerate(bars):
        x0 = left + (min(0.0, b["value"]) - lo) / span * (W - left - 60)
        w = abs(b["value"]) / span * (W - left - 60)
        y = 4 + i * row
        label = html.escape(f"{b['label']} {b['key']}" if len(p["y"]) > 1 else b["label"])
        rect = f'x="{x0:.1f}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row - 6}"'
        out.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end">{label}</text>'
                   f'<rect class="bar" {rect} fill="{PALETTE[i % len(PALETTE)]}"/>'
                   f'<text x="{x0 + w + 4:.1f}" y="{y + 14}">'
                   f'{_fmt(b["value"])}</text>')  # fmt: skip
    return (f'<svg viewBox="0 0 {W} {h}" width="{W}" height="{h}" font-size="11" fill="#555" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(out)}</svg>')  # fmt: skip


def _scatter(p: dict[str, Any], cols: dict[str, str]) -> str:
    pts = p["points"]
    if not pts:
        return '<p class="muted">no run has both values</p>'
    ax = _Axes(
        [q["x"] for q in pts], [q["y"] for q in pts], bool(p.get("log_x")), bool(p.get("log_y"))
    )
    body = [ax.grid(p["x"])]
    for q in pts:
        body.append(f'<circle cx="{ax.px(q["x"]):.1f}" cy="{ax.py(q["y"]):.1f}" r="4" '
                    f'fill="{cols.get(q["run"], PALETTE[0])}"><title>{html.escape(q["label"])}: '
                    f'{_fmt(q["x"])}, {_fmt(q["y"])}</title></circle>')  # fmt: skip
    return _svg("".join(body), f"{p['y']} against {p['x']}")


def _parallel(p: dict[str, Any], cols: dict[str, str]) -> str:
    columns, rows = p["columns"], p["rows"]
    n = len(columns)
    step = (W - PAD_L - PAD_R) / max(1, n - 1)
    ranges = []
    for j in range(n):
        nums = [r["values"][j] for r in rows if isinstance(r["values"][j], int | float)]
        ranges.append((min(nums), max(nums)) if nums else (0.0, 1.0))
    body = []
    for j, c in enumerate(columns):
        x = PAD_L + j * step
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{PAD_T}" y2="{H - PAD_B}" '
                    f'stroke="#bbb"/><text x="{x:.1f}" y="{H - 8}" text-anchor="middle">'
                    f"{html.escape(c)}</text>")  # fmt: skip
    for r in rows:
        d, pen = [], "M"
        for j, v in enumerate(r["values"]):
            if not isinstance(v, int | float) or isinstance(v, bool):
                pen = "M"
                continue
            lo, hi = ranges[j]
            f = (v - lo) / (hi - lo) if hi > lo else 0.5
            d.append(f"{pen}{PAD_L + j * step:.1f},{H - PAD_B - f * (H - PAD_T - PAD_B):.1f}")
            pen = "L"
        color = cols.get(r["run"], PALETTE[0])
        body.append(f'<path d="{" ".join(d)}" fill="none" stroke="{color}">'
                    f"<title>{html.escape(r['label'])}</title></path>")  # fmt: skip
    return _svg("".join(body), "parallel coordinates")


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return _fmt(v)
    if isinstance(v, dict | list):
        return html.escape(json.dumps(v)[:200])
    return html.escape("" if v is None else str(v))


def _table(head: list[str], rows: list[list[Any]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _media(it: dict[str, Any]) -> str:
    """One logged file of a media panel: an image, an audio or video player, a table, an
    HTML page in a sandboxed frame (no script runs), or its name when not inlined."""
    kind, src = it.get("kind", "file"), it.get("src")
    if kind == "image" and src:
        return f'<img src="{src}" alt="{html.escape(it["name"])}">'
    if kind in ("audio", "video") and src:
        return f'<{kind} controls preload="metadata" src="{src}"></{kind}>'
    if kind == "html" and "html" in it:
        return f'<iframe sandbox="" srcdoc="{html.escape(it["html"])}" title="html"></iframe>'
    if kind == "table" and "table" in it:
        t = it["table"]
        more = f'<div class="muted">{len(t["rows"])} of {t["n"]} rows</div>'
        return _table(t["columns"], t["rows"]) + (more if t["n"] > len(t["rows"]) else "")
    return f'<span class="file">{html.escape(it["name"])}</span>'


def _panel(p: dict[str, Any], cols: dict[str, str]) -> str:
    kind = p["type"]
    if kind == "markdown":
        return f'<div class="prose">{to_html(p["text"])}</div>'
    if kind == "line":
        inner = _line(p, cols)
    elif kind == "bar":
        inner = _bar(p, cols)
    elif kind == "scalar":
        v = p["value"]
        inner = f'<div class="scalar">{"—" if v is None else _fmt(v)}</div>'
        inner += f'<div class="muted">{html.escape(p.get("agg", "mean"))} of {p["n"]} runs</div>'
    elif kind == "scatter":
        inner = _scatter(p, cols)
    elif kind == "parallel":
        inner = _parallel(p, cols)
    elif kind == "runs":
        inner = _table(["run", *p["columns"]], [[r["label"], *r["values"]] for r in p["rows"]])
    elif kind == "compare":
        inner = _table(["field", *p["runs"]], [[r["field"], *r["values"]] for r in p["rows"]])
    else:
        figs = [
            f'<figure data-kind="{html.escape(it.get("kind", "file"))}">{_media(it)}'
            f"<figcaption>{html.escape(it['label'])} · step {it['step']}</figcaption></figure>"
            for it in p["items"]
        ]
        inner = (
            f'<div class="media">{"".join(figs)}</div>'
            if figs
            else (f'<p class="muted">{html.escape(p.get("note") or "no media at this step")}</p>')
        )
    title = p.get("title") or (", ".join(p["y"]) if isinstance(p.get("y"), list) else p.get("y"))
    head = f"<h3>{html.escape(str(title or kind))}</h3>"
    return f'<section class="panel" data-type="{kind}">{head}{inner}</section>'


def _finite(v: Any) -> Any:
    """``v`` with NaN and infinities as null (JSON has no such numbers)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        try:
            if math.isfinite(sum(v)):  # numbers only, all finite (anything else: TypeError)
                return v
        except TypeError:
            pass
        return [_finite(x) for x in v]
    return v


def render(report: Any, data: dict[str, Any]) -> str:
    """The whole page for ``report`` with its resolved ``data``."""
    ids = [r for rs in data["runsets"].values() for r in rs["selected"]]
    for p in data["panels"]:
        ids += [ln["run"] for ln in p.get("lines", []) if "run" in ln]
    cols = colors(ids)
    body = []
    panels = iter(data["panels"])
    from wisp.reports._format import TextBlock

    left = len(report.panels) - len(data["panels"])  # a first screen: the rest comes later
    for block in report.blocks:
        if not isinstance(block, TextBlock):
            got = next(panels, None)
            if got is None:
                body.append(f'<p class="muted more">{left} more panels are being drawn…</p>')
                break
            body.append(_panel(got, cols))
        else:
            body.append(to_html(block.text))
    blob = ""
    if left <= 0:  # a first screen is no export: its data comes with the whole page
        # no "<" at all in the script element (no "</script>", no "<!--" state)
        text = json.dumps(_finite(data), allow_nan=False, default=str).replace("<", "\\u003c")
        blob = f'<script type="application/json" id="wisp-report-data">{text}</script>'
    frozen = [n for n, rs in report.runsets.items() if rs.frozen]
    meta = f"project {report.project}" + (
        f" · frozen run sets: {', '.join(frozen)}" if frozen else ""
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; media-src data:; style-src 'unsafe-inline'\">"
        f"<title>{html.escape(report.title or 'wisp report')}</title><style>{_CSS}</style></head>"
        f'<body><main><h1 class="title">{html.escape(report.title)}</h1>'
        f'<div class="meta">{html.escape(meta)}</div>{"".join(body)}</main>{blob}</body></html>\n'
    )
