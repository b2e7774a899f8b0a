/**
 * One scenario as an SVG chart, written by hand (no dependency): small
 * multiples, one panel per strategy set, origin calls started per time
 * bucket as bars. All panels share one logarithmic y axis, so a set that
 * made 1 call per expiry and one that made 200 are both visible and
 * comparable; marks (TTL, FLUSHALL) and spans (an outage) cross every panel.
 *
 * @module
 */
import type { ScenarioResult } from "../types.ts";

const W = 780;
const LEFT = 140;
const RIGHT = 150;
const PLOT = W - LEFT - RIGHT;
const PANEL = 44;
const GAP = 10;
const HEAD = 90;
const WRAP = 118;
const FONT = `font-family="ui-sans-serif, system-ui, sans-serif"`;

function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

// Break a line at spaces so it fits the chart's width (about WRAP characters).
function wrap(text: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > WRAP) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

function num(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/** The chart of one scenario, as an SVG document. */
export function chartSvg(index: number | string, s: ScenarioResult): string {
  const buckets = Math.max(1, ...s.rows.map((r) => r.series.length));
  const spanMs = buckets * s.bucketMs;
  const peak = Math.max(1, ...s.rows.flatMap((r) => r.series));
  // log10(1 + v): 0 stays on the baseline, 1 call is visible, 1,000 fits.
  const scale = (v: number) => (Math.log10(1 + v) / Math.log10(1 + peak)) * (PANEL - 4);
  const x = (ms: number) => LEFT + (ms / spanMs) * PLOT;
  const what = s.seriesLabel ?? "origin calls";
  const header = [
    ...wrap(s.setup),
    ...wrap(
      `${s.origin}. Bars: ${what}${
        s.seriesLabel === undefined ? " started" : ""
      } per ${s.bucketMs} ms (log scale, shared).`,
    ),
  ];
  const TOP = HEAD + (header.length - 2) * 16;
  const bottom = TOP + s.rows.length * (PANEL + GAP);
  const H = bottom + 40;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" ${FONT} font-size="11">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="12" y="22" font-size="15" font-weight="600">${esc(`${index}. ${s.title}: ${what} over time`)}</text>`,
    ...header.map((line, i) => `<text x="12" y="${40 + i * 16}" fill="#444">${esc(line)}</text>`),
  ];
  for (const m of s.marks) {
    if (m.toMs !== undefined) {
      out.push(
        `<rect x="${x(m.atMs).toFixed(1)}" y="${TOP - 20}" width="${(x(m.toMs) - x(m.atMs)).toFixed(1)}" height="${
          bottom - TOP + 20
        }" fill="#f6d7d3" opacity="0.6"/>`,
      );
      out.push(
        `<text x="${(x(m.atMs) + 3).toFixed(1)}" y="${TOP - 10}" fill="#a33" font-size="10">${esc(m.label)}</text>`,
      );
    } else {
      // Point marks (TTL, FLUSHALL) are labelled on their own line, above the spans' labels.
      out.push(
        `<line x1="${x(m.atMs).toFixed(1)}" x2="${x(m.atMs).toFixed(1)}" y1="${
          TOP - 26
        }" y2="${bottom}" stroke="#999" stroke-dasharray="3,3"/>`,
      );
      out.push(
        `<text x="${(x(m.atMs) + 3).toFixed(1)}" y="${TOP - 22}" fill="#666" font-size="10">${esc(m.label)}</text>`,
      );
    }
  }
  s.rows.forEach((r, i) => {
    const base = TOP + i * (PANEL + GAP) + PANEL;
    const color = i === 0 ? "#c0392b" : "#2c6fb8";
    out.push(
      `<text x="${LEFT - 30}" y="${base - PANEL / 2 + 4}" text-anchor="end" font-weight="600">${esc(r.set)}</text>`,
    );
    out.push(`<line x1="${LEFT}" x2="${LEFT + PLOT}" y1="${base}" y2="${base}" stroke="#bbb"/>`);
    for (const tick of [1, 10, 100, 1000, 10000]) {
      if (tick > peak) break;
      const y = base - scale(tick);
      out.push(`<line x1="${LEFT}" x2="${LEFT + PLOT}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#eee"/>`);
      out.push(
        `<text x="${LEFT - 3}" y="${(y + 3).toFixed(1)}" text-anchor="end" fill="#aaa" font-size="8">${tick}</text>`,
      );
    }
    const bw = PLOT / buckets;
    r.series.forEach((v, b) => {
      if (v === 0) return;
      const h = scale(v);
      out.push(
        `<rect x="${(LEFT + b * bw).toFixed(1)}" y="${(base - h).toFixed(1)}" width="${
          Math.max(1, bw - 0.5).toFixed(1)
        }" height="${h.toFixed(1)}" fill="${color}"><title>${
          esc(`${r.set}: ${v} ${what} at ${num((b * s.bucketMs) / 1000)} s`)
        }</title></rect>`,
      );
    });
    const side = r.coherence !== undefined
      ? `${r.coherence.staleReads.toLocaleString("en-US")} stale of ${r.requests.toLocaleString("en-US")} reads`
      : `${r.originCalls.toLocaleString("en-US")} call${r.originCalls === 1 ? "" : "s"}, peak ${r.peakConcurrent}`;
    const fail = r.errors + r.timeouts > 0
      ? `${(r.errors + r.timeouts).toLocaleString("en-US")} failed`
      : r.stale > 0
      ? `${r.stale.toLocaleString("en-US")} stale`
      : "";
    out.push(`<text x="${LEFT + PLOT + 8}" y="${base - PANEL / 2}" fill="#222">${esc(side)}</text>`);
    if (fail) out.push(`<text x="${LEFT + PLOT + 8}" y="${base - PANEL / 2 + 13}" fill="#666">${esc(fail)}</text>`);
  });
  // Time axis: about eight ticks at a round step.
  const step = [10, 50, 100, 250, 500, 1000, 2000, 5000].find((st) => spanMs / st <= 10) ?? 10_000;
  for (let t = 0; t <= spanMs; t += step) {
    out.push(`<line x1="${x(t).toFixed(1)}" x2="${x(t).toFixed(1)}" y1="${bottom}" y2="${bottom + 4}" stroke="#888"/>`);
    const label = spanMs < 2000 ? `${t} ms` : `${num(t / 1000)} s`;
    out.push(`<text x="${x(t).toFixed(1)}" y="${bottom + 16}" text-anchor="middle" fill="#444">${label}</text>`);
  }
  if (s.durationMs < spanMs) {
    // Calls right of this line are the drain: loads and refreshes still running when requests stopped.
    out.push(
      `<line x1="${x(s.durationMs).toFixed(1)}" x2="${x(s.durationMs).toFixed(1)}" y1="${
        TOP - 26
      }" y2="${bottom}" stroke="#444"/>`,
    );
    out.push(
      `<text x="${(x(s.durationMs) - 3).toFixed(1)}" y="${
        bottom + 30
      }" text-anchor="end" fill="#444" font-size="10">requests stop here</text>`,
    );
  }
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
