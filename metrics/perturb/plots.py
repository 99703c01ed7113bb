"""Plain SVG charts of testbed results (no plotting library is installed): APPLS Figure 1 and LENS Figure 2."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
)
DASH = {"informativeness": "", "simplification": "8 3", "coherence": "2 2", "faithfulness": "5 2 1 2", "lens": "1 3"}


def _nice_range(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    if math.isclose(low, high):
        pad = abs(low) * 0.1 or 1.0
        return low - pad, high + pad
    pad = (high - low) * 0.08
    return low - pad, high + pad


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    step = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(step))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= step), default=step)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def line_chart(
    title: str,
    series: Mapping[str, Mapping[float, float]],
    *,
    styles: Mapping[str, str] | None = None,
    x_label: str = "perturbation (%)",
    y_label: str = "mean score",
) -> str:
    """One line per series (x -> y), with a legend on the right."""
    width, height, left, right, top, bottom = 760, 420, 70, 200, 40, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = sorted({x for points in series.values() for x in points}) or [0.0, 100.0]
    ys = [y for points in series.values() for y in points.values()] or [0.0, 1.0]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = _nice_range(ys)

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>',
    ]
    for y in _ticks(y0, y1):
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{_fmt(y)}</text>')
    for x in xs:
        parts.append(f'<text x="{px(x):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{_fmt(x)}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>')
    parts.append(
        f'<text transform="translate(16,{top + plot_h / 2}) rotate(-90)" text-anchor="middle">{escape(y_label)}</text>'
    )
    for i, (name, points) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        dash = (styles or {}).get(name, "")
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(points.items()))
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"'
            + (f' stroke-dasharray="{dash}"' if dash else "") + "/>"
        )
        for x, y in points.items():
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"/>')
        ly = top + 10 + i * 18
        parts.append(
            f'<line x1="{width - right + 12}" x2="{width - right + 40}" y1="{ly}" y2="{ly}" stroke="{color}" '
            f'stroke-width="2"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>"
        )
        parts.append(f'<text x="{width - right + 46}" y="{ly + 4}">{escape(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def bar_panels(title: str, panels: Mapping[str, Mapping[str, Mapping[str, float]]], order: Sequence[str]) -> str:
    """One panel per metric: a bar per system (mean) with a ±1 standard deviation error bar."""
    panel_w, panel_h, gap, top = 270, 260, 20, 50
    width = max(760, max(1, len(panels)) * (panel_w + gap) + gap)
    height = top + panel_h + 60
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{gap}" y="24" font-size="15" font-weight="bold">{escape(title)}</text>',
    ]
    for p, (metric, systems) in enumerate(panels.items()):
        x_origin = gap + p * (panel_w + gap) + 40
        plot_w = panel_w - 50
        names = [s for s in order if s in systems]
        lows = [systems[s]["mean"] - systems[s]["std"] for s in names]
        highs = [systems[s]["mean"] + systems[s]["std"] for s in names]
        y0, y1 = _nice_range([*lows, *highs, 0.0] if min(lows, default=0) >= 0 else [*lows, *highs])

        def py(y: float, y0: float = y0, y1: float = y1) -> float:
            return top + (1 - (y - y0) / (y1 - y0)) * panel_h

        parts.append(f'<text x="{x_origin + plot_w / 2}" y="{top - 8}" text-anchor="middle" '
                     f'font-weight="bold">{escape(metric)}</text>')
        parts.append(f'<rect x="{x_origin}" y="{top}" width="{plot_w}" height="{panel_h}" fill="none" stroke="#444"/>')
        for y in _ticks(y0, y1, 4):
            parts.append(f'<text x="{x_origin - 4}" y="{py(y) + 4:.1f}" text-anchor="end">{_fmt(y)}</text>')
            parts.append(f'<line x1="{x_origin}" x2="{x_origin + plot_w}" y1="{py(y):.1f}" y2="{py(y):.1f}" '
                         'stroke="#eee"/>')
        slot = plot_w / max(1, len(names))
        base = py(max(y0, min(0.0, y1)))
        for i, system in enumerate(names):
            mean, std = systems[system]["mean"], systems[system]["std"]
            cx = x_origin + slot * (i + 0.5)
            color = PALETTE[i % len(PALETTE)]
            top_y, bottom_y = min(py(mean), base), max(py(mean), base)
            parts.append(f'<rect x="{cx - slot * 0.3:.1f}" y="{top_y:.1f}" width="{slot * 0.6:.1f}" '
                         f'height="{bottom_y - top_y:.1f}" fill="{color}" opacity="0.8"/>')
            parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{py(mean - std):.1f}" y2="{py(mean + std):.1f}" '
                         'stroke="black"/>')
            label_y = top + panel_h + 16 + (i % 2) * 14  # alternate rows so long names do not overlap
            parts.append(f'<text x="{cx:.1f}" y="{label_y}" text-anchor="middle">{escape(system)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
