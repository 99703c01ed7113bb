// Colours shared by the dashboard's plots (colour-blind-friendly, after Okabe & Ito).

export const CLUSTER_COLOURS = ["#0b5cad", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#6b4c9a",
                                "#8c6d1f", "#444d5c"];

export function clusterColour(cluster) {
  return CLUSTER_COLOURS[(Math.max(1, cluster) - 1) % CLUSTER_COLOURS.length];
}

// The category colours are base.css's --cat-* variables, the same the annotation pages use.
const cssColour = (name, fallback) =>
  (typeof document !== "undefined" && getComputedStyle(document.documentElement).getPropertyValue(name).trim()) || fallback;
export const CATEGORY_COLOURS = {
  split: cssColour("--cat-split", "#8e44ad"), deletion: cssColour("--cat-deletion", "#c25e00"),
  paraphrase: cssColour("--cat-paraphrase", "#2456c7"), unknown: "#c3c8d2",
};
export const CATEGORY_NAMES = { split: "Splitting", deletion: "Deletion", paraphrase: "Paraphrase", unknown: "Unknown" };

/** Diverging background for a z-score: blue above 0, red below, white at 0. */
export function divergingFill(value, maxAbs) {
  if (value === null || value === undefined) return "#f3f4f6";
  const t = Math.min(1, Math.abs(value) / (maxAbs || 1));
  const [r, g, b] = value >= 0 ? [47, 111, 208] : [200, 65, 59];
  const mix = (c) => Math.round(255 + (c - 255) * t * 0.75);
  return `rgb(${mix(r)}, ${mix(g)}, ${mix(b)})`;
}

const DARK = "#1d2330";

function luminance(rgb) {
  const lin = (c) => { const v = c / 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const [r, g, b] = rgb.map(lin);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** Text colour readable on divergingFill(value): white or dark, whichever contrasts more (WCAG ratio). */
export function divergingText(value, maxAbs) {
  const m = /rgb\((\d+), (\d+), (\d+)\)/.exec(divergingFill(value, maxAbs));
  if (!m) return DARK;
  const bg = luminance([Number(m[1]), Number(m[2]), Number(m[3])]);
  const onWhite = 1.05 / (bg + 0.05);
  const onDark = (bg + 0.05) / (luminance([0x1d, 0x23, 0x30]) + 0.05);
  return onWhite > onDark ? "#fff" : DARK;
}
