"""The dashboard's SVG charts: well-formed, every shape inside the view box, bars proportional to their
values, every label escaped, axes that cover the data with at most four steps."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from dashboard import charts

SVG = "{http://www.w3.org/2000/svg}"
labels_st = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
counts_st = st.integers(min_value=0, max_value=10**6)


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - our own output


def _inside(root: ET.Element) -> None:
    _, _, width, height = (float(v) for v in root.attrib["viewBox"].split())
    for rect in root.iter(f"{SVG}rect"):
        x, y = float(rect.attrib["x"]), float(rect.attrib["y"])
        w, h = float(rect.attrib["width"]), float(rect.attrib["height"])
        assert w >= 0 and h >= 0
        assert -0.05 <= x and x + w <= width + 0.05, rect.attrib
        assert -0.05 <= y and y + h <= height + 0.05, rect.attrib
    for circle in root.iter(f"{SVG}circle"):
        assert 0 <= float(circle.attrib["cx"]) <= width and 0 <= float(circle.attrib["cy"]) <= height


@given(st.floats(min_value=1e-6, max_value=1e12, allow_nan=False), st.booleans())
def test_scale_covers_the_value_in_at_most_four_nice_steps(value: float, integer: bool) -> None:
    top, step = charts.scale(value, integer=integer)
    assert top >= value * (1 - 1e-9)
    assert top - step < value * (1 + 1e-9)
    assert round(top / step) <= 4
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m) for m in (1, 2, 2.5, 5, 10))
    if integer:
        assert step >= 1 and float(step).is_integer()


@given(
    st.lists(st.tuples(labels_st, counts_st, counts_st), min_size=1, max_size=40),
)
def test_stacked_bars_are_inside_and_proportional(rows: list[tuple[str, int, int]]) -> None:
    labels = [r[0] for r in rows]
    svg = charts.bar_chart("t", labels, {"a": [r[1] for r in rows], "b": [r[2] for r in rows]})
    root = _parse(svg)
    _inside(root)
    bars = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    totals = [a + b for _, a, b in rows]
    if not any(totals):
        assert not bars
        return
    top, _ = charts.scale(max(totals), integer=True)
    plot_h = charts.HEIGHT - charts.TOP - charts.BOTTOM
    assert len(bars) == sum((a > 0) + (b > 0) for _, a, b in rows)
    drawn = sum(float(r.attrib["height"]) for r in bars)
    assert math.isclose(drawn, plot_h * sum(totals) / top, rel_tol=1e-3, abs_tol=0.1 * len(bars))


@given(st.lists(st.one_of(st.none(), st.floats(min_value=0, max_value=1)), min_size=1, max_size=60))
def test_line_chart_keeps_points_inside_and_leaves_gaps_for_missing_days(values: list[float | None]) -> None:
    svg = charts.line_chart("hit rate", [str(i) for i in range(len(values))], {"r": values}, percent=True, y_max=1.0)
    root = _parse(svg)
    _inside(root)
    present = [v for v in values if v is not None]
    assert len(list(root.iter(f"{SVG}circle"))) == len(present)
    for line in root.iter(f"{SVG}polyline"):
        assert len(line.attrib["points"].split()) >= 2


@given(
    st.lists(
        st.tuples(st.integers(0, 60 * 24 * 90), st.integers(0, 600), st.integers(0, 500), labels_st),
        min_size=1,
        max_size=30,
    )
)
def test_timeline_keeps_every_session_inside(rows: list[tuple[int, int, int, str]]) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    spans = [
        charts.Span(label=label, start=start + timedelta(minutes=m), end=start + timedelta(minutes=m + d), size=size)
        for m, d, size, label in rows
    ]
    root = _parse(charts.timeline_chart("sessions", spans))
    _inside(root)
    assert len([r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]) == len(spans)


def _session_rects(root: ET.Element) -> list[tuple[float, float, float, float]]:
    return [
        tuple(float(r.attrib[k]) for k in ("x", "y", "width", "height"))  # type: ignore[misc]
        for r in root.iter(f"{SVG}rect")
        if r.find(f"{SVG}title") is not None
    ]


def test_sessions_replayed_on_one_day_do_not_overlap() -> None:
    """An import replays a month of sessions in minutes: they used to pile into one block."""
    start = datetime(2026, 1, 1, 9, tzinfo=UTC)
    spans = [
        charts.Span(
            label=f"s{i}", start=start + timedelta(seconds=20 * i), end=start + timedelta(minutes=5 + i), size=i
        )
        for i in range(12)
    ]
    root = _parse(charts.timeline_chart("sessions", spans))
    _inside(root)
    rects = _session_rects(root)
    assert len(rects) == len(spans)
    for i, (x, y, w, h) in enumerate(rects):
        for x2, y2, w2, h2 in rects[i + 1 :]:
            apart = x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y
            assert apart, ((x, y, w, h), (x2, y2, w2, h2))


def test_labels_are_escaped() -> None:
    svg = charts.bar_chart('<script>alert("x")</script>', ["<b>&"], {"<i>": [3]})
    assert "<script>" not in svg and "<b>" not in svg and "<i>" not in svg
    _parse(svg)


def test_no_data_says_so() -> None:
    assert "no data yet" in charts.bar_chart("t", ["a", "b"], {"x": [0, 0]})
    assert "no data yet" in charts.line_chart("t", ["a"], {"x": [None]})
    assert "no data yet" in charts.timeline_chart("t", [])


def test_legend_shows_when_asked_or_for_several_series() -> None:
    assert 'class="legend">session_ended<' not in charts.bar_chart("t", ["a"], {"session_ended": [1]})
    assert 'class="legend">session_ended<' in charts.bar_chart("t", ["a"], {"session_ended": [1]}, legend=True)
    assert 'class="legend">b<' in charts.bar_chart("t", ["a"], {"a": [1], "b": [2]})


def test_a_line_with_one_point_says_that_it_is_one_point() -> None:
    """A lone dot reads as a trend of nothing: the chart names the day and the value instead."""
    one = charts.line_chart("hit rate", ["01 Dec", "02 Dec", "03 Dec"], {"r": [None, 0.04, None]}, percent=True)
    root = _parse(one)
    _inside(root)
    notes = [t.text for t in root.iter(f"{SVG}text") if t.attrib.get("class") == "note"]
    assert notes == ["one day with data so far: 02 Dec, 4%"]
    two = charts.line_chart("hit rate", ["01 Dec", "02 Dec"], {"r": [0.5, 0.04]}, percent=True)
    assert 'class="note"' not in two
