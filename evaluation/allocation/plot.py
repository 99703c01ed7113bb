"""The allocation curves as an SVG drawn by hand (no plotting library is a dependency): Kendall's tau against
the full data's ranking (median over seeds, with its 5-95% band) and top-system accuracy, against the share of
the full ratings revealed, one line per policy.

Pure: the input is :func:`evaluation.allocation.simulate.curves`'s output per policy; every text put in the
SVG (the study's name, the policies') is escaped, so a page may show it inline.
"""

from __future__ import annotations

from html import escape
from typing import Any

import numpy as np

COLOURS = ("#1b1b1b", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#bcbd22", "#17becf", "#d62728",
           "#e377c2")


def _dash(index: int) -> str:
    """Every other policy's line dashed, so lines that coincide (and colours one cannot tell apart) still show."""
    return ' stroke-dasharray="6 3"' if index % 2 else ""


def svg_plot(title: str, full: int, curve: dict[str, Any]) -> str:
    """Two panels drawn by hand (no plotting library in the venv): median tau with its 5-95% band, and
    top-system accuracy, against the share of the full ratings."""
    width, height, pad, gap = 900, 360, 50, 60
    panel = (width - 2 * pad - gap) / 2
    full = max(full, 1)
    right = max((max(data["cost"]) for data in curve.values() if data["cost"]), default=full) / full

    def xy(x0: float, share: float, value: float, low: float, high: float) -> tuple[float, float]:
        return x0 + share / right * panel, pad + (1 - (value - low) / (high - low)) * (height - 2 * pad)

    heading = (f"{title}: Kendall tau (median, 5-95% band) and top-system accuracy against the share of the "
               f"full {full} ratings")
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 20 * len(curve)}" '
             f'font-family="sans-serif" font-size="12" role="img" aria-label="{escape(heading)}">',
             f'<title>{escape(heading)}</title>',
             f'<text x="{pad}" y="20" font-size="14">{escape(title)}: Kendall tau (median, 5-95% band) and top-system '
             'accuracy against the share of the full ratings</text>']
    panels = (("tau", 0.7, 1.0, "Kendall τ with the full ranking"),
              ("top1_accuracy", 0.0, 1.0, "top system right (share of seeds)"))
    for p_index, (key, low, high, label) in enumerate(panels):
        x0 = pad + p_index * (panel + gap)
        parts.append(f'<rect x="{x0}" y="{pad}" width="{panel}" height="{height - 2 * pad}" '
                     'fill="none" stroke="#999"/>')
        for tick in np.linspace(low, high, 4):
            _, y = xy(x0, 0, tick, low, high)
            parts.append(f'<text x="{x0 - 4}" y="{y + 4}" text-anchor="end">{tick:.2f}</text>')
        for share in [v for v in (0.1, 0.2, 0.3, 0.5, 1.0) if v <= right + 1e-9]:
            x, _ = xy(x0, share, low, low, high)
            parts.append(f'<line x1="{x}" x2="{x}" y1="{pad}" y2="{height - pad}" stroke="#eee"/>'
                         f'<text x="{x}" y="{height - pad + 14}" text-anchor="middle">{share:.0%}</text>')
        if key == "tau":
            _, y = xy(x0, 0, 0.95, low, high)
            parts.append(f'<line x1="{x0}" x2="{x0 + panel}" y1="{y}" y2="{y}" stroke="#d62728" '
                         'stroke-dasharray="4 3"/>'
                         f'<text x="{x0 + panel - 4}" y="{y - 4}" text-anchor="end" fill="#d62728">τ = 0.95</text>')
        parts.append(f'<text x="{x0 + panel / 2}" y="{height - pad + 30}" text-anchor="middle">{label}</text>')
        for c_index, data in enumerate(curve.values()):
            colour = COLOURS[c_index % len(COLOURS)]
            shares = [c / full for c in data["cost"]]
            series = data["tau_median"] if key == "tau" else data["top1_accuracy"]
            if key == "tau":
                band = [xy(x0, s, max(low, v), low, high) for s, v in zip(shares, data["tau_p05"], strict=True)
                        if v is not None]
                band += [xy(x0, s, max(low, v), low, high) for s, v in
                         reversed(list(zip(shares, data["tau_p95"], strict=True))) if v is not None]
                points = " ".join(f"{x:.1f},{y:.1f}" for x, y in band)
                parts.append(f'<polygon points="{points}" fill="{colour}" fill-opacity="0.08" stroke="none"/>')
            line = [xy(x0, s, max(low, v), low, high) for s, v in zip(shares, series, strict=True) if v is not None]
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in line)
            parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"'
                         f'{_dash(c_index)}/>')
    for c_index, name in enumerate(curve):
        y = height + 20 * c_index
        colour = COLOURS[c_index % len(COLOURS)]
        parts.append(f'<line x1="{pad}" x2="{pad + 24}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" stroke-width="2"'
                     f'{_dash(c_index)}/>'
                     f'<text x="{pad + 30}" y="{y}">{escape(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
