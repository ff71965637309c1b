"""Charts for the memory dashboard, drawn as SVG on the server: no JavaScript, no chart library and
nothing fetched from the internet at run time. Every label is escaped; every shape stays inside the
view box (the property tests hold this for any input)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ("#2f6fb0", "#e07b39", "#3a9a5b", "#b0413e", "#7d5ba6", "#8c8c3a", "#3aa3a3", "#a0522d")
OUTCOME_COLOURS = {"success": "#3a9a5b", "failure": "#b0413e", "unknown": "#9a9a9a", "": "#2f6fb0"}

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 28, 34


def scale(value: float, *, integer: bool = False) -> tuple[float, float]:
    """The top of the axis and the step between grid lines for data up to `value`: the step is 1, 2,
    2.5 or 5 times a power of ten (no 2.5 for counts, and at least 1), there are at most four steps,
    and the top is the first multiple of the step at or above `value`."""
    if not math.isfinite(value) or value <= 0:
        return 1.0, 1.0 if integer else 0.25
    raw = value / 4
    exponent = math.floor(math.log10(raw))
    factors = (1.0, 2.0, 5.0, 10.0) if integer else (1.0, 2.0, 2.5, 5.0, 10.0)
    step = next(f * 10**exponent for f in factors if f * 10**exponent >= raw * (1 - 1e-12))
    if integer:
        step = max(1.0, float(math.ceil(step)))
    top = math.ceil(value / step - 1e-9) * step
    return top, step


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _fmt(value: float, percent: bool) -> str:
    if percent:
        return f"{value:.0%}"
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _frame(title: str, body: list[str], legend: Sequence[tuple[str, str]] = (), height: int = HEIGHT) -> SafeString:
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    x = LEFT
    for name, colour in legend:
        parts.append(f'<rect x="{x}" y="6" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14}" y="15" class="legend">{escape(name)}</text>')
        x += 24 + 7 * len(name)
        if x > WIDTH - 80:
            break
    parts.extend(body)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated text above is escaped


def _axes(top: float, step: float, percent: bool, height: int = HEIGHT) -> list[str]:
    plot_h = height - TOP - BOTTOM
    out = []
    for i in range(round(top / step) + 1):
        value = step * i
        y = TOP + plot_h - plot_h * value / top
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_num(y)}" y2="{_num(y)}" class="grid"/>')
        out.append(
            f'<text x="{LEFT - 4}" y="{_num(y + 3)}" class="axis" text-anchor="end">{_fmt(value, percent)}</text>'
        )
    return out


def _x_labels(labels: Sequence[str], centres: Sequence[float], height: int = HEIGHT) -> list[str]:
    every = max(1, math.ceil(len(labels) / 12))
    return [
        f'<text x="{_num(x)}" y="{height - BOTTOM + 14}" class="axis" text-anchor="middle">{escape(label)}</text>'
        for i, (label, x) in enumerate(zip(labels, centres, strict=True))
        if i % every == 0
    ]


def _empty(title: str) -> SafeString:
    return _frame(
        title, [f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" class="empty" text-anchor="middle">no data yet</text>']
    )


def bar_chart(
    title: str,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    percent: bool = False,
    legend: bool | None = None,
) -> SafeString:
    """Stacked bars: one bar per label, one segment per series (in order). The legend shows when
    asked, or by default when there is more than one series."""
    if not labels or not series:
        return _empty(title)
    totals = [sum(max(0.0, float(values[i])) for values in series.values()) for i in range(len(labels))]
    if not any(totals):
        return _empty(title)
    integer = not percent and all(float(v).is_integer() for values in series.values() for v in values)
    y_max, step = scale(max(totals), integer=integer)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(labels)
    bar_w = max(1.0, slot * 0.7)
    body = _axes(y_max, step, percent)
    centres = []
    for i, label in enumerate(labels):
        x = LEFT + slot * i + (slot - bar_w) / 2
        centres.append(x + bar_w / 2)
        base: float = TOP + plot_h
        for j, (name, values) in enumerate(series.items()):
            value = max(0.0, float(values[i]))
            if value == 0:
                continue
            h = plot_h * value / y_max
            base -= h
            colour = PALETTE[j % len(PALETTE)]
            body.append(
                f'<rect x="{_num(x)}" y="{_num(base)}" width="{_num(bar_w)}" height="{_num(h)}" fill="{colour}">'
                f"<title>{escape(label)} · {escape(name)}: {_fmt(value, percent)}</title></rect>"
            )
    body += _x_labels(labels, centres)
    show = legend if legend is not None else len(series) > 1
    keys = [(name, PALETTE[j % len(PALETTE)]) for j, name in enumerate(series)] if show else []
    return _frame(title, body, keys)


def line_chart(
    title: str,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    percent: bool = False,
    y_max: float | None = None,
) -> SafeString:
    """Lines with a dot per point; None leaves a gap (a day without data is not a zero)."""
    points = [float(v) for values in series.values() for v in values if v is not None and math.isfinite(v)]
    if not labels or not points:
        return _empty(title)
    top, step = scale(y_max if y_max is not None and y_max > 0 else max(points))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(labels)
    centres = [LEFT + slot * (i + 0.5) for i in range(len(labels))]
    body = _axes(top, step, percent)
    for j, (name, values) in enumerate(series.items()):
        colour = PALETTE[j % len(PALETTE)]
        segment: list[str] = []
        segments: list[list[str]] = [segment]
        for i, raw in enumerate(values):
            if raw is None or not math.isfinite(raw):
                segment = []
                segments.append(segment)
                continue
            value = min(max(0.0, float(raw)), top)
            y = TOP + plot_h - plot_h * value / top
            segment.append(f"{_num(centres[i])},{_num(y)}")
            body.append(
                f'<circle cx="{_num(centres[i])}" cy="{_num(y)}" r="3" fill="{colour}">'
                f"<title>{escape(labels[i])} · {escape(name)}: {_fmt(float(raw), percent)}</title></circle>"
            )
        for seg in segments:
            if len(seg) > 1:
                body.append(f'<polyline points="{" ".join(seg)}" fill="none" stroke="{colour}" stroke-width="2"/>')
    body += _x_labels(labels, centres)
    if len(points) == 1:
        # A lone dot draws no line and reads as a trend of nothing: say what it is.
        i, raw = next(
            (i, v) for values in series.values() for i, v in enumerate(values) if v is not None and math.isfinite(v)
        )
        note = f"one day with data so far: {labels[i]}, {_fmt(float(raw), percent)}"
        body.append(f'<text x="{WIDTH / 2}" y="{TOP + 12}" class="note" text-anchor="middle">{escape(note)}</text>')
    legend = [(name, PALETTE[j % len(PALETTE)]) for j, name in enumerate(series)] if len(series) > 1 else []
    return _frame(title, body, legend)


@dataclass(frozen=True)
class Span:
    """One session on a timeline: from its start to its end, its size (episodes) and its outcome."""

    label: str
    start: datetime
    end: datetime
    size: int = 1
    outcome: str = ""
    href: str = ""


def _lanes(extents: Sequence[tuple[float, float]], gap: float = 2.0) -> list[int]:
    """A lane per bar so that bars in one lane never overlap: each goes to the first lane free at its
    start (the extents are in start order)."""
    ends: list[float] = []
    out = []
    for x0, x1 in extents:
        lane = next((i for i, end in enumerate(ends) if end + gap <= x0), len(ends))
        if lane == len(ends):
            ends.append(x1)
        else:
            ends[lane] = x1
        out.append(lane)
    return out


def timeline_chart(title: str, spans: Sequence[Span]) -> SafeString:
    """Sessions on a time axis: each a bar placed at its start, as wide as it lasted (at least a few
    pixels), coloured by its outcome, its episode count written in it when it fits. Sessions that
    overlap (an import replays many within minutes) take separate lanes instead of hiding each other."""
    if not spans:
        return _empty(title)
    ordered = sorted(spans, key=lambda s: s.start)
    lo = min(s.start for s in spans)
    hi = max(max(s.end, s.start) for s in spans)
    total = max((hi - lo).total_seconds(), 1.0)
    plot_w = WIDTH - LEFT - RIGHT
    extents = []
    for span in ordered:
        x0 = LEFT + plot_w * (span.start - lo).total_seconds() / total
        x1 = LEFT + plot_w * (max(span.end, span.start) - lo).total_seconds() / total
        width = max(4.0, x1 - x0)
        x0 = min(x0, WIDTH - RIGHT - width)
        extents.append((x0, x0 + width))
    lanes = _lanes(extents)
    count = max(lanes) + 1
    lane_h = min(22.0, max(8.0, (HEIGHT - TOP - BOTTOM) / count))
    height = max(HEIGHT, math.ceil(TOP + BOTTOM + count * lane_h))
    body = [f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{height - BOTTOM}" y2="{height - BOTTOM}" class="grid"/>']
    for span, (x0, x1), lane in zip(ordered, extents, lanes, strict=True):
        y = TOP + lane * lane_h
        h = lane_h - 2
        colour = OUTCOME_COLOURS.get(span.outcome, OUTCOME_COLOURS[""])
        tip = (
            f"{escape(span.label)}: {span.start:%Y-%m-%d %H:%M} → {span.end:%Y-%m-%d %H:%M} · "
            f"{span.size} episodes · {escape(span.outcome or 'open')}"
        )
        rect = (
            f'<rect x="{_num(x0)}" y="{_num(y)}" width="{_num(x1 - x0)}" height="{_num(h)}" rx="1" fill="{colour}" '
            f'fill-opacity="0.85"><title>{tip}</title></rect>'
        )
        if x1 - x0 >= 8 + 7 * len(str(span.size)) and h >= 10:
            rect += f'<text x="{_num(x0 + 3)}" y="{_num(y + h - 3)}" class="bar-label">{max(0, span.size)}</text>'
        body.append(f'<a href="{escape(span.href)}">{rect}</a>' if span.href else rect)
    ticks = 5
    for i in range(ticks):
        at = lo + (hi - lo) * i / (ticks - 1)
        x = LEFT + plot_w * i / (ticks - 1)
        anchor = "start" if i == 0 else "end" if i == ticks - 1 else "middle"
        # The first and last ticks carry the year: the range is read from them.
        label = f"{at:%Y-%m-%d %H:%M}" if i in (0, ticks - 1) else f"{at:%d %b %H:%M}"
        body.append(
            f'<text x="{_num(x)}" y="{height - BOTTOM + 14}" class="axis" text-anchor="{anchor}">{label}</text>'
        )
    legend = [(k, v) for k, v in OUTCOME_COLOURS.items() if k] + [("open", OUTCOME_COLOURS[""])]
    return _frame(title, body, legend, height=height)
