"""Server-side SVG charts (no chart library, no inline style: colours come from the stylesheet)."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    note: str = ""


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def column_chart(bars: list[Bar], *, title: str, width: int = 640, height: int = 200) -> Markup:
    """Vertical bars (e.g. per day), labelled at both ends; each bar has a tooltip."""
    pad_left, pad_bottom, pad_top = 40, 24, 12
    plot_w, plot_h = width - pad_left - 8, height - pad_bottom - pad_top
    peak = max((b.value for b in bars), default=0) or 1
    step = plot_w / max(1, len(bars))
    parts = [
        f'<svg class="chart column" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{pad_left}" y1="{pad_top + plot_h}" x2="{width - 8}" '
        f'y2="{pad_top + plot_h}"/>',
        f'<text class="tick" x="{pad_left - 6}" y="{pad_top + 8}" text-anchor="end">'
        f"{escape(_fmt(peak))}</text>",
        f'<text class="tick" x="{pad_left - 6}" y="{pad_top + plot_h}" text-anchor="end">0</text>',
    ]
    for i, bar in enumerate(bars):
        h = plot_h * bar.value / peak
        x = pad_left + i * step + step * 0.1
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{pad_top + plot_h - h:.1f}" '
            f'width="{max(1.0, step * 0.8):.1f}" height="{h:.1f}">'
            f"<title>{escape(bar.label)}: {escape(_fmt(bar.value))}</title></rect>"
        )
    if bars:
        parts.append(
            f'<text class="tick" x="{pad_left}" y="{height - 6}">{escape(bars[0].label)}</text>'
        )
        parts.append(
            f'<text class="tick" x="{width - 8}" y="{height - 6}" text-anchor="end">'
            f"{escape(bars[-1].label)}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def bar_chart(bars: list[Bar], *, title: str, width: int = 640) -> Markup:
    """Horizontal bars with labels and values (e.g. by type, by project)."""
    row_h, label_w, value_w = 26, 170, 70
    height = max(1, len(bars)) * row_h + 8
    plot_w = width - label_w - value_w
    peak = max((b.value for b in bars), default=0) or 1
    parts = [
        f'<svg class="chart bars" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for i, bar in enumerate(bars):
        y = 4 + i * row_h
        w = plot_w * bar.value / peak
        label = bar.label if len(bar.label) <= 24 else bar.label[:23] + "…"
        parts.append(
            f'<text class="label" x="{label_w - 8}" y="{y + 17}" text-anchor="end">'
            f"{escape(label)}</text>"
            f'<rect class="bar series-{i % 8}" x="{label_w}" y="{y + 3}" width="{max(w, 1):.1f}" '
            f'height="{row_h - 8}"><title>{escape(bar.label)}: {escape(_fmt(bar.value))}'
            f"{escape(bar.note)}</title></rect>"
            f'<text class="value" x="{label_w + max(w, 1) + 6:.1f}" y="{y + 17}">'
            f"{escape(_fmt(bar.value))}{escape(bar.note)}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def gauge(fraction: float, *, title: str, width: int = 320) -> Markup:
    """A single filled bar for a 0..1 fraction (embedding coverage)."""
    f = min(1.0, max(0.0, fraction))
    parts = [
        f'<svg class="chart gauge" viewBox="0 0 {width} 40" role="img" '
        f'aria-label="{escape(title)}: {f * 100:.0f}%" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}: {f * 100:.1f}%</title>",
        f'<rect class="track" x="0" y="8" width="{width}" height="16" rx="4"/>',
        f'<rect class="bar" x="0" y="8" width="{width * f:.1f}" height="16" rx="4"/>',
        f'<text class="value" x="{width / 2:.0f}" y="38" text-anchor="middle">'
        f"{f * 100:.1f}%</text>",
        "</svg>",
    ]
    return Markup("".join(parts))
