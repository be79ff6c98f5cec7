// Drawable model (data.mjs) -> layered layout (@dagrejs/dagre) -> SVG text.
// The page (in a Worker for big graphs) and `wasmq render` in Node use the
// same two functions, so both draw the same picture.
import dagre from '@dagrejs/dagre';
import { BACKEND_COLOURS, LEGEND, REGION_OUTLINES, REGION_STROKE_WIDTH, fmtBytes } from './data.mjs';

const EDGE_FONT = 10;

/** Positions for every node and edge: plain data (it crosses a Worker boundary). */
// dagre's phases recurse once per node along the longest chain (ranking,
// initial order), which overflows a Worker's stack near 1,000 nodes deep and
// grows superlinearly in time. Larger graphs are laid out in bands of
// consecutive nodes (execution order is topological), each band by dagre,
// stacked top to bottom; edges between bands are drawn straight.
const BAND = 150;

export function layoutDrawable(drawable) {
  const rankdir = drawable.direction === 'LR' ? 'LR' : 'TB';
  if (drawable.nodes.length <= BAND) {
    const l = layoutBand(drawable.nodes, drawable.edges.map((e, i) => [e, i]), true, rankdir);
    return { ...l, edges: drawable.edges.map((_, i) => l.edges[i]) };
  }
  const bandOf = new Map();
  drawable.nodes.forEach((n, i) => bandOf.set(n.key, Math.floor(i / BAND)));
  const bands = [];
  for (let b = 0; b * BAND < drawable.nodes.length; b++) bands.push({ nodes: drawable.nodes.slice(b * BAND, (b + 1) * BAND), edges: [] });
  const crossing = [];
  drawable.edges.forEach((e, i) => {
    const b = bandOf.get(e.from);
    if (b === bandOf.get(e.to)) bands[b].edges.push([e, i]);
    else crossing.push([e, i]);
  });
  const laid = bands.map((band) => layoutBand(band.nodes, band.edges, false, rankdir));
  const width = Math.max(...laid.map((l) => l.width));
  const nodes = {};
  const edges = new Array(drawable.edges.length);
  let top = 0;
  laid.forEach((l, b) => {
    const dx = (width - l.width) / 2;
    for (const [key, p] of Object.entries(l.nodes)) nodes[key] = { x: p.x + dx, y: p.y + top };
    for (const [, i] of bands[b].edges) {
      const e = l.edges[i];
      edges[i] = { points: e.points.map(([x, y]) => [x + dx, y + top]), labelX: e.labelX + dx, labelY: e.labelY + top };
    }
    top += l.height + 40;
  });
  const size = new Map(drawable.nodes.map((n) => [n.key, n]));
  for (const [e, i] of crossing) {
    const a = nodes[e.from];
    const z = nodes[e.to];
    const p0 = [a.x, a.y + size.get(e.from).height / 2];
    const p1 = [z.x, z.y - size.get(e.to).height / 2];
    edges[i] = { points: [p0, p1], labelX: (p0[0] + p1[0]) / 2, labelY: (p0[1] + p1[1]) / 2 };
  }
  return { width: Math.ceil(width), height: Math.ceil(top - 40), nodes, edges };
}

/**
 * One dagre layout, top-down or left-to-right (rankdir); edges as [edge, index in the drawable]. labelSpace
 * reserves room for edge labels (a dummy node per edge: twice the ranks, so
 * only for small graphs; in bands labels sit on the edge's midpoint).
 */
function layoutBand(bandNodes, bandEdges, labelSpace, rankdir = 'TB') {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir, nodesep: 28, ranksep: labelSpace ? 34 : 44, edgesep: 12, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of bandNodes) g.setNode(n.key, { width: n.width, height: n.height });
  for (const [e, i] of bandEdges) {
    g.setEdge(e.from, e.to, labelSpace ? { width: e.label.length * 5.6 + 8, height: EDGE_FONT + 4, labelpos: 'c' } : {}, `e${i}`);
  }
  dagre.layout(g);
  const nodes = {};
  for (const key of g.nodes()) {
    const { x, y } = g.node(key);
    nodes[key] = { x, y };
  }
  const edges = {};
  for (const [e, i] of bandEdges) {
    const { points, x, y } = g.edge(e.from, e.to, `e${i}`);
    const mid = points[Math.floor(points.length / 2)];
    edges[i] = { points: points.map((p) => [p.x, p.y]), labelX: x ?? mid.x, labelY: y ?? mid.y };
  }
  const { width, height } = g.graph();
  return { width: Math.ceil(width), height: Math.ceil(height), nodes, edges };
}

export const escapeXml = (s) =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

const attrText = (attrs) =>
  Object.entries(attrs)
    .map(([k, v]) => ` ${k}="${escapeXml(v)}"`)
    .join('');

function nodeShape(n, { x, y }) {
  const w = n.width;
  const h = n.height;
  const left = x - w / 2;
  const top = y - h / 2;
  if (n.kind === 'transition') {
    // Hexagon: a transition moves bytes, it computes nothing.
    const d = 14;
    const pts = [
      [left, y],
      [left + d, top],
      [left + w - d, top],
      [left + w, y],
      [left + w - d, top + h],
      [left + d, top + h],
    ];
    return `<polygon points="${pts.map((p) => p.join(',')).join(' ')}" fill="${n.fill}" stroke="${n.stroke}" stroke-width="${n.strokeWidth ?? 1.5}"/>`;
  }
  const r = n.kind === 'io' ? h / 2 : 6;
  const dash = n.kind === 'io' ? ' stroke-dasharray="4 3"' : '';
  return `<rect x="${left}" y="${top}" width="${w}" height="${h}" rx="${r}" fill="${n.fill}" stroke="${n.stroke}" stroke-width="${n.strokeWidth ?? 1.2}"${dash}/>`;
}

/** The graph as one standalone SVG document (inline styles, no external refs). */
export function renderSvg(drawable, layout, { title = '' } = {}) {
  const out = [];
  const W = layout.width;
  const H = layout.height;
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="wq-graph" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" data-overlay="${drawable.overlay}" data-nodes="${drawable.nodes.filter((n) => n.kind !== 'io').length}">`,
  );
  if (title) out.push(`<title>${escapeXml(title)}</title>`);
  out.push(
    '<defs><marker id="wq-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#6b7280"/></marker></defs>',
  );
  out.push(`<rect class="wq-bg" x="0" y="0" width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push('<g class="wq-edges" fill="none" stroke="#9ca3af" stroke-width="1.2">');
  drawable.edges.forEach((e, i) => {
    const pts = layout.edges[i].points;
    const d = pts.map((p, k) => `${k ? 'L' : 'M'}${p[0].toFixed(1)},${p[1].toFixed(1)}`).join('');
    out.push(`<path d="${d}" marker-end="url(#wq-arrow)" data-edge="${escapeXml(e.from)}>${escapeXml(e.to)}" data-tensor="${e.tensor}"/>`);
  });
  out.push('</g><g class="wq-edge-labels" font-family="ui-monospace,Menlo,Consolas,monospace" font-size="10" fill="#4b5563" text-anchor="middle">');
  drawable.edges.forEach((e, i) => {
    const { labelX, labelY } = layout.edges[i];
    const w = e.label.length * 5.6 + 6;
    out.push(
      `<g data-tensor="${e.tensor}"><rect x="${(labelX - w / 2).toFixed(1)}" y="${(labelY - 7).toFixed(1)}" width="${w.toFixed(1)}" height="13" rx="3" fill="#ffffff" fill-opacity="0.9"/><text x="${labelX.toFixed(1)}" y="${(labelY + 3.5).toFixed(1)}">${escapeXml(e.label)}</text></g>`,
    );
  });
  out.push('</g><g class="wq-nodes" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" text-anchor="middle">');
  for (const n of drawable.nodes) {
    const pos = layout.nodes[n.key];
    const cls = n.kind === 'io' ? 'wq-io' : n.kind === 'transition' ? 'wq-node wq-transition' : 'wq-node';
    out.push(`<g class="${cls}"${attrText(n.attrs)} data-key="${escapeXml(n.key)}"><title>${escapeXml(n.name)}</title>`);
    out.push(nodeShape(n, pos));
    out.push(`<text x="${pos.x}" y="${pos.y - 3}" font-size="12" font-weight="600" fill="${n.ink}">${escapeXml(n.label)}</text>`);
    out.push(`<text x="${pos.x}" y="${pos.y + 12}" font-size="10" fill="${n.ink}" fill-opacity="0.85">${escapeXml(n.sub)}</text>`);
    out.push('</g>');
  }
  out.push('</g></svg>');
  return out.join('');
}

/**
 * Legend entries with colours (HTML for the page and the report). With the
 * records' legend (graph.legend, the core registry's capability records) it
 * also names the ops of this graph that have no int8 form.
 */
export function legendHtml(legend = null) {
  const items = LEGEND.map(
    (l) => `<span class="wq-legend-item" data-legend="${l.key}"><i style="background:${BACKEND_COLOURS[l.key]}"></i>${escapeXml(l.label)}</span>`,
  );
  items.push(`<span class="wq-legend-item" data-legend="region"><i style="background:#fff;box-shadow:inset 0 0 0 ${REGION_STROKE_WIDTH - 1}px ${REGION_OUTLINES[0]}"></i>int8 region (outline; fill = backend)</span>`);
  const floatOnly = (legend?.ops ?? []).filter((o) => o.int8 === 'none').map((o) => o.op);
  if (floatOnly.length) items.push(`<span class="wq-legend-item wq-legend-float-only">no int8 form: ${escapeXml(floatOnly.join(', '))}</span>`);
  return items.join('');
}

/**
 * Memory lanes as SVG: one row per intermediate tensor, a bar over its
 * [first, last] execution steps; data-tensor/data-first/data-last let the
 * page highlight the lanes of a selected node.
 */
export function renderLanesSvg(lanes, steps, { width = 900 } = {}) {
  const row = 14;
  const left = 180;
  const H = Math.max(1, lanes.length) * row + 24;
  const sx = (width - left - 10) / Math.max(1, steps);
  const maxBytes = Math.max(1, ...lanes.map((l) => l.bytes));
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" class="wq-lanes" viewBox="0 0 ${width} ${H}" width="${width}" height="${H}" font-family="system-ui,sans-serif" font-size="10">`];
  out.push(`<text x="${left}" y="12" fill="#6b7280">execution step →  (${steps} nodes; bar shade = bytes)</text>`);
  lanes.forEach((l, i) => {
    const y = 20 + i * row;
    const shade = 0.25 + 0.75 * (l.bytes / maxBytes);
    const name = l.name.length > 28 ? `${l.name.slice(0, 27)}…` : l.name;
    out.push(
      `<g class="wq-lane" data-tensor="${l.tensor}" data-first="${l.first}" data-last="${l.last}"><title>${escapeXml(`${l.name}: steps ${l.first}–${l.last}, ${fmtBytes(l.bytes)}`)}</title>` +
        `<text x="${left - 6}" y="${y + 10}" text-anchor="end" fill="#374151">${escapeXml(name)}</text>` +
        `<rect x="${(left + l.first * sx).toFixed(1)}" y="${y + 2}" width="${Math.max(3, (l.last - l.first + 1) * sx).toFixed(1)}" height="${row - 4}" rx="2" fill="#4f74b3" fill-opacity="${shade.toFixed(2)}"/></g>`,
    );
  });
  out.push('</svg>');
  return out.join('');
}
