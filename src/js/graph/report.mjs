// report.html: one self-contained file (inline CSS, inline SVG, no scripts
// needed to read it) with the graph, the partition summary, a per-node table
// and the memory lanes. Used by `wasmq render -o report.html`; pure string work.
import { toDrawable, memoryLanes, tensorLabel, fmtBytes, fmtNum, colourKey, BACKEND_COLOURS, layoutLabel, layoutMargin, transitionWhy, transitionBytes } from './data.mjs';
import { layoutDrawable, renderSvg, renderLanesSvg, legendHtml, escapeXml } from './render.mjs';

export const REPORT_CSS = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#111827;margin:0;background:#f8fafc}
header{background:#0f172a;color:#f8fafc;padding:14px 24px}header h1{font-size:18px;margin:0}header p{margin:4px 0 0;color:#cbd5e1}
main{padding:16px 24px}section{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:14px 16px;margin-bottom:16px}
h2{font-size:15px;margin:0 0 10px}.wq-summary{font-weight:600}
.wq-legend{display:flex;flex-wrap:wrap;gap:14px;margin:8px 0}.wq-legend-item{display:inline-flex;align-items:center;gap:6px;font-size:12px}
.wq-legend-item i{width:14px;height:14px;border-radius:3px;display:inline-block;border:1px solid #0003}
.wq-graph-box{overflow:auto;max-height:80vh;border:1px solid #e5e7eb;border-radius:6px}
table{border-collapse:collapse;width:100%;font-size:12px}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef2f7;vertical-align:top}
th{background:#f1f5f9;position:sticky;top:0}td code{font-size:11px}.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
.wq-lanes-box{overflow:auto;max-height:60vh}`;

/**
 * graph: records (model.graph()); options: overlay, nodeData (Model
 * Explorer node-data JSON for time/error overlays), title, subtitle.
 */
export function renderReport(graph, { overlay = 'region', nodeData = null, title = 'wasmq report', subtitle = '' } = {}) {
  const drawable = toDrawable(graph, { overlay, nodeData });
  const svg = renderSvg(drawable, layoutDrawable(drawable), { title });
  const lanes = memoryLanes(graph);
  const values = nodeData?.results ?? {};
  const rows = graph.nodes.map((n) => {
    const outs = n.outputs.filter((o) => o >= 0).map((o) => graph.tensors[o]);
    const v = values[n.name]?.value;
    return `<tr data-node="${escapeXml(n.name)}"><td>${n.id}</td><td>${escapeXml(n.name)}</td><td><code>${escapeXml(n.op)}</code></td>` +
      `<td><span class="sw" style="background:${BACKEND_COLOURS[colourKey(n)]}"></span>${escapeXml(n.backend)}</td><td>${n.region}</td>` +
      `<td><code>${escapeXml(n.reason.code)}</code> ${escapeXml(n.reason.detail)}</td><td>${escapeXml(n.kernel)}${n.kernel_isa ? ` <small>${escapeXml(n.kernel_isa)}</small>` : ''}</td>` +
      `<td data-layout-why="${escapeXml(n.layout?.why ?? '')}">${escapeXml(layoutLabel(n))}${layoutMargin(n) ? `<br>${escapeXml(layoutMargin(n))}` : ''}</td>` +
      `<td>${outs.map((t) => `<code>${escapeXml(tensorLabel(t))}</code>`).join('<br>')}</td>` +
      (nodeData ? `<td>${v === undefined ? '' : fmtNum(v)}</td>` : '') + '</tr>';
  });
  // Each transition and why it exists (who needed its order, where the tensor comes from).
  const transitions = graph.transitions.map((t) =>
    `<tr data-transition-node="${t.node}" data-needed-by="${(t.needed_by ?? []).join(' ')}"><td>${t.node}</td><td>${t.from}→${t.to}</td>` +
    `<td data-planned-bytes="${t.planned_bytes ?? ''}">${escapeXml(transitionBytes(t))}</td><td>${escapeXml(transitionWhy(graph, t))}</td></tr>`);
  const plan = graph.passes?.find((p) => p.name === 'layout_int8' && p.ran)?.stats;
  const planned = plan && plan.planned_bytes !== undefined
    ? `<p>planner: minimum ${fmtBytes(plan.planned_bytes)} moved over ${plan.free_labels} free label(s)${plan.exact ? ', exact (two labels, minimum cut)' : ''}</p>`
    : '';
  const mem = graph.memory;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${REPORT_CSS}</style></head>
<body><header><h1>${escapeXml(title)}</h1><p>${escapeXml(subtitle)}</p></header><main>
<section><h2>Partition</h2><div class="wq-summary" data-summary>${escapeXml(graph.summary)}</div>
<div class="wq-legend">${legendHtml(graph.legend)}</div>
<div>mode <code>${escapeXml(graph.mode)}</code> · ${graph.regions.length} int8 region(s) · ${graph.transitions.length} transition(s) · arena ${fmtBytes(mem.arena_bytes)} (lower bound ${fmtBytes(mem.lower_bound_bytes)})${overlay !== 'region' ? ` · overlay <b>${escapeXml(overlay)}</b>${drawable.range ? ` ${fmtNum(drawable.range.min)} … ${fmtNum(drawable.range.max)}` : ''}` : ''}</div></section>
<section><h2>Graph</h2><div class="wq-graph-box">${svg}</div></section>
<section><h2>Nodes</h2><table><thead><tr><th>#</th><th>name</th><th>op</th><th>backend</th><th>region</th><th>reason</th><th>kernel</th><th>layout</th><th>outputs</th>${nodeData ? `<th>${escapeXml(nodeData.label ?? overlay)}</th>` : ''}</tr></thead>
<tbody>${rows.join('\n')}</tbody></table></section>
<section><h2>Layout transitions</h2>${planned}${transitions.length ? `<table><thead><tr><th>node</th><th>order</th><th>bytes</th><th>why</th></tr></thead>
<tbody>${transitions.join('\n')}</tbody></table>` : '<p>none</p>'}</section>
<section><h2>Memory lanes</h2><div class="wq-lanes-box">${renderLanesSvg(lanes, graph.nodes.length)}</div></section>
</main></body></html>
`;
}
