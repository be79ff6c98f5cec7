// The inspector's shell: loading (picker, drop, demos), the graph view (the
// same data/render modules as `wasmq render`; layout in a Worker), the side
// panel, search, overlays, memory lanes, export, and runs in a Worker.
import svgPanZoom from 'svg-pan-zoom';
import { toDrawable, nodeData, parseNodeData, memoryLanes, tensorLabel, capabilityLabel, colourKey, BACKEND_COLOURS, fmtBytes, fmtNum, LAYOUT_WHY, layoutLabel, layoutMargin, transitionAt, transitionWhy, transitionBytes } from '../src/js/graph/data.mjs';
import { renderSvg, renderLanesSvg, legendHtml, escapeXml } from '../src/js/graph/render.mjs';
import { randomArray } from '../src/js/random.mjs';
import { readOnnxNodes, weightStats } from '../src/js/graph/onnx_nodes.mjs';
import { startDemo } from './demos.mjs';
import { Runner } from './runner.mjs';
import { createQuantPanel } from './quant-panel.mjs';

const $ = (id) => document.getElementById(id);

// --- workers -----------------------------------------------------------------

const layoutWorker = new Worker(new URL('./layout-worker.mjs', import.meta.url), { type: 'module' });
let layoutSeq = 0;
const layoutWaiters = new Map();
layoutWorker.onmessage = ({ data }) => {
  const w = layoutWaiters.get(data.id);
  layoutWaiters.delete(data.id);
  if (data.error) w?.reject(new Error(data.error));
  else w?.resolve(data);
};
function layoutInWorker(drawable) {
  const id = ++layoutSeq;
  return new Promise((resolve, reject) => {
    layoutWaiters.set(id, { resolve, reject });
    layoutWorker.postMessage({ id, drawable });
  });
}

export const runner = new Runner();

// --- state -------------------------------------------------------------------

const state = {
  models: new Map(), // key -> {name, bytes, graph, inputs, outputs, feeds?}
  shown: null, // key of the model drawn
  overlay: 'region',
  direction: 'TB', // graph drawn top-down or left to right ('LR')
  collapse: false, // int8 regions drawn as one box each
  data: { time: null, error: null }, // Model Explorer node data per overlay
  svgText: '',
  panZoom: null,
  selected: -1,
  lastLayoutMs: 0,
};

function setStatus(text, { error = false, progress } = {}) {
  $('status-text').textContent = text;
  $('status').classList.toggle('error', error);
  $('progress').hidden = progress === undefined;
  if (progress !== undefined) $('progress').value = progress;
}

// --- loading -----------------------------------------------------------------

// Models run on every core (up to 4) when the page is cross-origin isolated,
// which the app's server arranges (COOP/COEP); else on one thread.
const DEFAULT_THREADS = globalThis.crossOriginIsolated ? Math.min(navigator.hardwareConcurrency || 1, 4) : 1;
const THREADED_DIR = new URL('wasmq-mt/', document.baseURI).href;

/** Loads bytes into the model Worker under `key`; draws it when `show`. */
/** feeds: the input runs use (else random); samples: calibration feeds the model comes with. */
export async function openModel(key, name, bytes, { show = true, options = {}, feeds, samples } = {}) {
  setStatus(`Loading ${name}…`);
  const copy = bytes.slice(); // the Worker gets its own copy; we keep ours for reloads
  options = { threads: DEFAULT_THREADS, ...options };
  const r = await runner.call({ type: 'load', key, bytes: copy, options, threadedDir: THREADED_DIR }, undefined, [copy.buffer]);
  const entry = { key, name, bytes, graph: r.graph, inputs: r.inputs, outputs: r.outputs, options, info: r.info, feeds, samples };
  state.models.set(key, entry);
  refreshModelPicker();
  if (state.shown) refreshCompare();
  if (show) await showModel(key);
  return entry;
}

function refreshModelPicker() {
  const sel = $('graph-model');
  sel.replaceChildren(...[...state.models.values()].map((m) => new Option(m.name, m.key)));
  sel.hidden = state.models.size < 2;
  if (state.shown) sel.value = state.shown;
}

async function showModel(key) {
  state.shown = key;
  const { info } = state.models.get(key);
  // Which core runs the model: 'simd' or 'simd-threads', and on how many threads.
  $('status').dataset.build = info.build;
  $('status').dataset.threads = info.threads;
  $('threads').textContent = threadsText(info);
  $('threads').title = info.fallback ?? '';
  $('threads').classList.toggle('warn', Boolean(info.fallback));
  state.data = { time: null, error: state.data.error };
  state.selected = -1;
  $('graph-model').value = key;
  $('run').disabled = false;
  $('quantize').disabled = false;
  refreshCompare();
  $('export-svg').disabled = false;
  $('export-png').disabled = false;
  await draw();
  showLanes();
  $('side').innerHTML = '<h2>Details</h2><p class="muted">Click a node to see its backend, reason, kernel, quantization parameters and shapes.</p>';
}

/** Which core runs the shown model: threads, or one thread and why. */
function threadsText(info) {
  if (info.threads > 1) return `${info.threads} threads`;
  // The page's server serves the threaded core from the clone's build: say how to make it.
  const build = /cannot load the threaded/.test(info.fallback ?? '') ? ' (build it: bash wasm_build/build.sh --threads)' : '';
  if (info.fallback) return `1 thread (${info.requestedThreads} asked): ${info.fallback}${build}`;
  return globalThis.crossOriginIsolated ? '1 thread' : '1 thread (page not cross-origin isolated)';
}

async function readFileBytes(file) {
  return new Uint8Array(await file.arrayBuffer());
}

async function openFile(file) {
  try {
    clearDemo();
    state.models.clear();
    await openModel('file', file.name, await readFileBytes(file));
    setStatus(`${file.name}: ${current().graph.summary}`);
  } catch (e) {
    setStatus(`${file.name}: ${e.message}`, { error: true });
  }
}

const current = () => state.models.get(state.shown);

// --- drawing -----------------------------------------------------------------

/** The model drawn beside the shown one: the float model of a quantized one, or the int8 result of a float one. */
function besidePartner(m) {
  const key = m.quant?.floatKey ?? m.int8Key;
  return key ? (state.models.get(key) ?? null) : null;
}

let besidePanZoom = null;
async function drawBeside(partner) {
  const box = $('graph-beside');
  besidePanZoom?.destroy();
  besidePanZoom = null;
  if (!partner) return box.replaceChildren();
  const drawable = toDrawable(partner.graph, { overlay: 'region' });
  const { layout } = await layoutInWorker(drawable);
  box.innerHTML = `<div class="beside-head"><b>${escapeXml(partner.name)}</b>: ${escapeXml(partner.graph.summary)}</div>${renderSvg(drawable, layout, { title: partner.name })}`;
  const svg = box.querySelector('svg');
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  besidePanZoom = svgPanZoom(svg, { zoomScaleSensitivity: 0.3, minZoom: 0.05, maxZoom: 20, fit: true, center: true, controlIconsEnabled: true });
}

async function draw() {
  const m = current();
  if (!m) return;
  const partner = besidePartner(m);
  $('graph-beside').hidden = !partner;
  const overlay = state.overlay;
  const drawable = toDrawable(m.graph, { overlay, nodeData: overlay === 'region' ? null : state.data[overlay], direction: state.direction, collapse: state.collapse });
  const t0 = performance.now();
  const { layout, ms } = await layoutInWorker(drawable);
  state.lastLayoutMs = ms;
  state.svgText = renderSvg(drawable, layout, { title: m.name });
  const box = $('graph');
  state.panZoom?.destroy();
  box.innerHTML = state.svgText;
  const svg = box.querySelector('svg');
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  state.panZoom = svgPanZoom(svg, { zoomScaleSensitivity: 0.3, minZoom: 0.01, maxZoom: 20, fit: true, center: true, controlIconsEnabled: true });
  if (drawable.nodes.length <= READABLE_NODES) readableView(state.panZoom, svg);
  svg.dataset.scale = screenScale(svg).toFixed(3);
  showMinimap(layout);
  $('summary').textContent = m.graph.summary;
  $('summary').dataset.layoutMs = ms.toFixed(1);
  $('legend').innerHTML =
    overlay === 'region'
      ? legendHtml(m.graph.legend)
      : drawable.range
        ? `<span class="range">${escapeXml(overlay)} overlay (${escapeXml(drawable.range.label)}): light = ${fmtNum(drawable.range.min)}, dark red = ${fmtNum(drawable.range.max)}; grey = no value</span>`
        : '';
  if (state.selected >= 0) markSelected(state.selected);
  const ms2 = performance.now() - t0;
  await drawBeside(partner);
  return ms2;
}

// Up to this many nodes the graph opens at a scale where labels are
// readable (node names at >= 10.8 px, details at 9 px), its inputs at the
// top; a graph that fits at that scale is shown whole. Bigger graphs open
// fitted (an overview); the wheel zooms in.
const READABLE_NODES = 300;
const READABLE_SCALE = 0.9;

/**
 * The minimap: the whole graph small, with a box for what the view shows;
 * shown when the graph does not fit the view. Clicking it centres the view
 * there.
 */
function showMinimap(layout) {
  const box = $('minimap');
  const { width, height, realZoom } = state.panZoom.getSizes();
  const fits = layout.width * realZoom <= width + 1 && layout.height * realZoom <= height + 1;
  box.hidden = fits;
  if (fits) return;
  // The same drawing without ids (no clash with the graph's marker) or node classes.
  box.innerHTML = state.svgText.replace(/ id="[^"]*"/g, '').replace(/class="wq-node[^"]*"/g, 'class="mm-node"').replace(/ width="\d+" height="\d+"/, ' preserveAspectRatio="xMidYMid meet"');
  const mini = box.querySelector('svg');
  const view = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
  view.setAttribute('class', 'mm-view');
  view.setAttribute('fill', '#0ea5e922');
  view.setAttribute('stroke', '#0284c7');
  view.setAttribute('stroke-width', String(Math.max(layout.width, layout.height) / 150));
  mini.append(view);
  const update = () => {
    const s = state.panZoom.getSizes();
    const pan = state.panZoom.getPan();
    view.setAttribute('x', (-pan.x / s.realZoom).toFixed(1));
    view.setAttribute('y', (-pan.y / s.realZoom).toFixed(1));
    view.setAttribute('width', (s.width / s.realZoom).toFixed(1));
    view.setAttribute('height', (s.height / s.realZoom).toFixed(1));
  };
  state.panZoom.setOnPan(update);
  state.panZoom.setOnZoom(update);
  update();
  box.onclick = (e) => {
    // Minimap pixels -> graph units (meet: one scale, centred).
    const r = box.getBoundingClientRect();
    const k = Math.min(r.width / layout.width, r.height / layout.height);
    const gx = (e.clientX - r.left - (r.width - layout.width * k) / 2) / k;
    const gy = (e.clientY - r.top - (r.height - layout.height * k) / 2) / k;
    const s = state.panZoom.getSizes();
    state.panZoom.pan({ x: s.width / 2 - gx * s.realZoom, y: s.height / 2 - gy * s.realZoom });
  };
}

/** SVG units to screen pixels, as drawn (the pan-zoom viewport's transform). */
const screenScale = (svg) => svg.querySelector('.svg-pan-zoom_viewport')?.getScreenCTM()?.a ?? 1;

function readableView(panZoom, svg) {
  const shown = screenScale(svg);
  if (shown >= READABLE_SCALE) return;
  const zoom = (panZoom.getZoom() * READABLE_SCALE) / shown;
  // A tall graph fits only far out: let the wheel zoom in past this view too.
  panZoom.setMaxZoom(Math.max(20, 4 * zoom));
  panZoom.zoom(zoom);
  const { width, viewBox, realZoom } = panZoom.getSizes();
  const scale = realZoom;
  // The top of the graph (its inputs), centred across when it is narrower than the view.
  const x = viewBox.width * scale <= width ? (width - viewBox.width * scale) / 2 : 8;
  panZoom.pan({ x: x - viewBox.x * scale, y: 8 - viewBox.y * scale });
}

// Large graphs start with the memory lanes folded: the graph gets the height.
const LANES_OPEN_NODES = 60;

function showLanes() {
  const g = current().graph;
  const lanes = memoryLanes(g);
  $('lanes-box').open = g.nodes.length <= LANES_OPEN_NODES;
  $('lanes').innerHTML = renderLanesSvg(lanes, g.nodes.length, { width: Math.max(700, $('lanes').clientWidth - 10) });
  $('arena').textContent = g.memory.planned ? `· arena ${fmtBytes(g.memory.arena_bytes)}, lower bound ${fmtBytes(g.memory.lower_bound_bytes)}` : '· planned at the first run';
}

function markSelected(nodeId) {
  for (const el of $('graph').querySelectorAll('.wq-node.selected')) el.classList.remove('selected');
  $('graph').querySelector(`.wq-node[data-node-id="${nodeId}"]`)?.classList.add('selected');
}

/**
 * The layout decision of node n (its label and why), the transition it
 * converts (who needed it, bytes, where the tensor comes from) and the
 * transitions it needed itself.
 */
function layoutHtml(g, n) {
  if (!n.layout) return '';
  let html = `<dt>layout</dt><dd data-layout-why="${escapeXml(n.layout.why)}"><code>${escapeXml(layoutLabel(n))}</code><br>${escapeXml(LAYOUT_WHY[n.layout.why] ?? '')}${layoutMargin(n) ? `<br><span data-other-bytes="${n.layout.other_bytes}">${escapeXml(layoutMargin(n))}</span>` : ''}</dd>`;
  const t = transitionAt(g, n.id);
  if (t) {
    html += `<dt>transition</dt><dd class="why" data-needed-by="${t.needed_by.join(' ')}" data-bytes="${t.bytes}" data-planned-bytes="${t.planned_bytes ?? ''}" data-producer="${t.producer}">${escapeXml(transitionWhy(g, t))}</dd>`;
  }
  const needed = g.transitions.filter((x) => x.needed_by?.includes(n.id));
  if (needed.length) {
    html += `<dt>needs</dt><dd data-needs="${needed.map((x) => x.node).join(' ')}">${needed
      .map((x) => `${escapeXml(g.nodes[x.node].op)} '${escapeXml(g.nodes[x.node].name)}' (${x.from}→${x.to}, ${escapeXml(transitionBytes(x))})`)
      .join('<br>')}</dd>`;
  }
  return html;
}

/** The ONNX file's own nodes and initializers of model m (read once, on the first selection). */
function onnxOf(m) {
  if (m.onnx === undefined) {
    try {
      m.onnx = readOnnxNodes(m.bytes);
    } catch {
      m.onnx = null;
    }
  }
  return m.onnx;
}

/** A small bar chart of a histogram (counts per equal-width bin). */
function histogramSvg(h) {
  const top = Math.max(1, ...h);
  const w = 4;
  return `<svg class="hist" width="${h.length * w}" height="24" viewBox="0 0 ${h.length * w} 24">${h
    .map((c, i) => `<rect x="${i * w}" y="${(24 - (22 * c) / top).toFixed(1)}" width="${w - 1}" height="${((22 * c) / top).toFixed(1)}" fill="#6b7280"/>`)
    .join('')}</svg>`;
}

/**
 * What the ONNX file says about the node: per source node its op,
 * attributes and the weights (initializers) it reads, with statistics.
 */
function onnxHtml(m, n) {
  const onnx = onnxOf(m);
  const names = n.source_nodes?.length ? n.source_nodes : [n.name];
  const found = onnx ? names.map((name) => onnx.nodes.get(name)).filter(Boolean) : [];
  if (!found.length) return '';
  return `<h3>In the ONNX file</h3>${found
    .map((src) => {
      const attrs = src.attributes.length
        ? `<dl class="attrs">${src.attributes.map((a) => `<dt>${escapeXml(a.name)}</dt><dd class="mono" data-attr="${escapeXml(a.name)}">${escapeXml(a.value)}</dd>`).join('')}</dl>`
        : '<div class="muted">no attributes</div>';
      const weights = src.inputs
        .filter((i) => onnx.initializers.has(i))
        .map((i) => {
          const st = weightStats(onnx.initializers.get(i));
          if (st.error) return `<div class="tensor"><span class="mono">${escapeXml(i)}</span>: ${escapeXml(st.error)}</div>`;
          return `<div class="tensor weight" data-weight="${escapeXml(i)}" data-min="${st.min}" data-max="${st.max}"><div><b>weight</b> <span class="mono">${escapeXml(i)}</span></div>
            <div class="mono">${escapeXml(st.dtype)} [${st.dims.join(', ')}] · ${st.count} values${st.zeros ? ` (${st.zeros} zero)` : ''}</div>
            <div class="mono">min ${fmtNum(st.min)} · max ${fmtNum(st.max)} · mean ${fmtNum(st.mean)}</div>${st.count > 1 ? histogramSvg(st.histogram) : ''}</div>`;
        })
        .join('');
      return `<div class="onnx-node" data-onnx-node="${escapeXml(src.name)}"><div><b>${escapeXml(src.domain ? `${src.domain}.${src.op}` : src.op)}</b> <span class="mono">${escapeXml(src.name)}</span></div>${attrs}${weights}</div>`;
    })
    .join('')}`;
}

function select(nodeId) {
  const g = current().graph;
  const n = g.nodes[nodeId];
  if (!n) return;
  state.selected = nodeId;
  markSelected(nodeId);
  const tensors = [...n.inputs, ...n.outputs].filter((t) => t >= 0);
  for (const el of $('lanes').querySelectorAll('.wq-lane')) {
    const t = Number(el.dataset.tensor);
    el.classList.toggle('hot', tensors.includes(t) || (Number(el.dataset.first) <= nodeId && nodeId <= Number(el.dataset.last) && false));
  }
  const fill = BACKEND_COLOURS[colourKey(n)];
  const time = state.data.time?.results?.[n.name]?.value;
  const err = state.data.error?.results?.[n.name]?.value;
  const tensorHtml = (id, role) => {
    const t = g.tensors[id];
    const q = t.qparams;
    const qp = q
      ? `<div class="qp mono">${escapeXml(q.dtype)} ${escapeXml(q.granularity)}${q.axis >= 0 ? ` axis ${q.axis}` : ''}<br>scale: ${q.scale.map((s) => fmtNum(s)).join(', ')}<br>zero point: ${q.zero_point.join(', ')}</div>`
      : '';
    return `<div class="tensor" data-tensor="${t.id}"><div><b>${role}</b> <span class="mono">${escapeXml(t.name)}</span></div>
      <div class="mono">${escapeXml(t.dtype)} [${t.dims.join(', ')}] · ${escapeXml(t.layout.name)} · ${escapeXml(t.kind)}${t.bytes ? ` · ${fmtBytes(t.bytes)}` : ''}</div>
      <div class="mono muted">${escapeXml(tensorLabel(t))}</div>${qp}</div>`;
  };
  $('side').innerHTML = `<h2>${escapeXml(n.name)}</h2>
    <dl>
      <dt>op</dt><dd class="mono">${escapeXml(n.domain ? `${n.domain}.${n.op}` : n.op)}</dd>
      <dt>backend</dt><dd><span class="pill" style="background:${fill}">${escapeXml(n.backend)}</span> ${escapeXml(n.role)}</dd>
      <dt>region</dt><dd>${n.region >= 0 ? n.region : 'none (float)'}</dd>
      <dt>reason</dt><dd><code>${escapeXml(n.reason.code)}</code><br>${escapeXml(n.reason.detail)}</dd>
      <dt>kernel</dt><dd class="mono">${escapeXml(n.kernel ? `${n.kernel}${n.kernel_isa ? ` (${n.kernel_isa})` : ''}` : '—')}</dd>
      <dt>op can</dt><dd class="mono">${escapeXml(capabilityLabel(g, n) || '—')}</dd>
      ${layoutHtml(g, n)}
      ${time !== undefined ? `<dt>time</dt><dd>${fmtNum(time)} ms (median)</dd>` : ''}
      ${err !== undefined ? `<dt>error</dt><dd>${fmtNum(err)}</dd>` : ''}
    </dl>
    <h3>Inputs</h3>${n.inputs.filter((t) => t >= 0).map((t, i) => tensorHtml(t, `in${i}`)).join('')}
    <h3>Outputs</h3>${n.outputs.filter((t) => t >= 0).map((t, i) => tensorHtml(t, `out${i}`)).join('')}
    ${onnxHtml(current(), n)}`;
}

// --- running -----------------------------------------------------------------

function randomFeeds(m) {
  const feeds = {};
  for (const info of m.inputs) {
    const dims = (info.shape ?? []).map((d, i) => (typeof d === 'number' ? d : i === 0 ? 1 : 64));
    feeds[info.name] = { data: randomArray(info.dtype, dims.reduce((a, b) => a * b, 1), 0), dims };
  }
  return feeds;
}

/** Runs a loaded model in the Worker with progress; Cancel terminates it. */
export async function runModel(key, feeds, { profile = false, repeats = 1, label = 'Running' } = {}) {
  $('cancel').hidden = false;
  setStatus(`${label}…`, { progress: 0 });
  try {
    return await runner.call({ type: 'run', key, feeds, profile, repeats }, (p) => setStatus(`${label}… ${Math.round(p * 100)}%`, { progress: p }));
  } finally {
    $('cancel').hidden = true;
  }
}

async function runShown() {
  const m = current();
  if (!m) return;
  $('run').disabled = true;
  try {
    const r = await runModel(m.key, m.feeds ?? randomFeeds(m), { profile: true, repeats: 5, label: `Running ${m.name} ×5` });
    state.data.time = nodeData(new Map(r.profile.map((n) => [n.name, n.ms])), { label: 'ms' });
    $('overlay').querySelector('[data-overlay="time"]').disabled = false;
    setStatus(`${m.name}: ${fmtNum(r.ms)} ms per run (${r.method}); per-node times (medians of 5 profiled runs) in the Time overlay`);
    if (state.overlay === 'time') await draw();
    if (state.selected >= 0) select(state.selected);
  } catch (e) {
    if (e.cancelled) {
      setStatus('Run cancelled; models reloaded.');
      await reloadAll();
    } else setStatus(`run failed: ${e.message}`, { error: true });
  } finally {
    $('run').disabled = false;
  }
}

const hasInt8 = (m) => m.graph.nodes.some((n) => n.backend.startsWith('int8') && n.role === 'compute');

/** The float model the shown int8 model is compared with (the first loaded float one). */
function floatPartner() {
  return [...state.models.values()].find((m) => m.key !== state.shown && !hasInt8(m)) ?? null;
}

function refreshCompare() {
  const m = current();
  $('compare').disabled = !(m && hasInt8(m) && floatPartner());
}

/** Error overlay: per-node max |int8 - float| of the shown model against its float partner. */
async function compareShown() {
  const m = current();
  const f = floatPartner();
  if (!m || !f) return;
  $('compare').disabled = true;
  setStatus(`Comparing ${m.name} with ${f.name}…`);
  try {
    const { rows } = await runner.call({ type: 'compare', key: m.key, floatKey: f.key, feeds: m.feeds ?? randomFeeds(m) });
    if (!rows.length) throw new Error('no int8 tensor has a float twin by name');
    state.data.error = nodeData(new Map(rows.map((r) => [r.node, r.maxAbs])), { label: 'max abs error' });
    $('overlay').querySelector('[data-overlay="error"]').disabled = false;
    const worst = rows.reduce((a, b) => (b.snr < a.snr ? b : a));
    setStatus(`${rows.length} nodes compared with ${f.name}; lowest SNR ${fmtNum(worst.snr)} dB at ${worst.node} (${worst.op}); error overlay on`);
    await setOverlay('error');
  } catch (e) {
    setStatus(`compare failed: ${e.message}`, { error: true });
  } finally {
    refreshCompare();
  }
}

async function reloadAll() {
  for (const m of state.models.values()) {
    const copy = m.bytes.slice();
    await runner.call({ type: 'load', key: m.key, bytes: copy, options: m.options, threadedDir: THREADED_DIR }, undefined, [copy.buffer]);
  }
}

/** Draws each int8 region as one box (true) or node by node. */
async function setCollapse(on) {
  state.collapse = on;
  $('collapse').classList.toggle('on', on);
  $('collapse').dataset.collapsed = String(on);
  if (current()) await draw();
}

/** Draws the graph top-down ('TB') or left to right ('LR'). */
async function setDirection(direction) {
  state.direction = direction;
  $('direction').textContent = direction === 'TB' ? '↓ top-down' : '→ left to right';
  $('direction').dataset.direction = direction;
  if (current()) await draw();
}

async function setOverlay(name) {
  if (name !== 'region' && !state.data[name]) {
    setStatus(name === 'time' ? 'Run the model first (Run ×5) for per-node times.' : 'Load per-node error values (Node data…, Model Explorer JSON) for the error overlay.', { error: true });
    return;
  }
  state.overlay = name;
  for (const b of $('overlay').querySelectorAll('button')) b.classList.toggle('on', b.dataset.overlay === name);
  await draw();
}

// --- export ------------------------------------------------------------------

export function download(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

const baseName = () => (current()?.name ?? 'graph').replace(/\.onnx$/i, '');

function exportSvg() {
  download(new Blob([state.svgText], { type: 'image/svg+xml' }), `${baseName()}.svg`);
}

async function exportPng() {
  const img = new Image();
  const url = URL.createObjectURL(new Blob([state.svgText], { type: 'image/svg+xml' }));
  await new Promise((resolve, reject) => {
    img.onload = resolve;
    img.onerror = () => reject(new Error('SVG did not rasterize'));
    img.src = url;
  });
  const scale = Math.min(2, 16000 / Math.max(img.width, img.height));
  const canvas = document.createElement('canvas');
  canvas.width = Math.round(img.width * scale);
  canvas.height = Math.round(img.height * scale);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
  URL.revokeObjectURL(url);
  canvas.toBlob((b) => download(b, `${baseName()}.png`), 'image/png');
}

// --- search ------------------------------------------------------------------

function search(text) {
  const q = text.trim().toLowerCase();
  const els = $('graph').querySelectorAll('.wq-node');
  let first = null;
  for (const el of els) {
    const hit = q !== '' && (el.dataset.node.toLowerCase().includes(q) || el.dataset.op.toLowerCase().includes(q));
    el.classList.toggle('match', hit);
    if (hit && !first) first = el;
  }
  if (first) {
    select(Number(first.dataset.nodeId));
    panTo(first);
  }
  return $('graph').querySelectorAll('.wq-node.match').length;
}

function panTo(el) {
  if (!state.panZoom) return;
  const box = el.getBBox();
  const sizes = state.panZoom.getSizes();
  const zoom = sizes.realZoom;
  state.panZoom.pan({ x: sizes.width / 2 - (box.x + box.width / 2) * zoom, y: sizes.height / 2 - (box.y + box.height / 2) * zoom });
}

// --- demos -------------------------------------------------------------------

let demoStop = null;
function clearDemo() {
  demoStop?.();
  demoStop = null;
  if (!quant.busy) $('quant-panel').hidden = true;
  $('demo-panel').hidden = true;
  $('demo-panel').replaceChildren();
}

async function openDemo(name) {
  clearDemo();
  state.models.clear();
  try {
    demoStop = await startDemo(name, { panel: $('demo-panel'), openModel, runModel, showModel, setStatus, quantizeLoaded: quant.quantizeLoaded });
  } catch (e) {
    // A cancelled quantization has said so already; the demo keeps its float model.
    if (!e.cancelled) setStatus(`demo ${name}: ${e.message}`, { error: true });
  }
}

// --- wiring ------------------------------------------------------------------

const quant = createQuantPanel({ state, openModel, showModel, runModel, setStatus, download, randomFeeds });

$('legend').innerHTML = legendHtml();
$('file').addEventListener('change', (e) => e.target.files[0] && openFile(e.target.files[0]));
$('demo').addEventListener('change', (e) => e.target.value && openDemo(e.target.value));
$('graph-model').addEventListener('change', (e) => showModel(e.target.value));
$('run').addEventListener('click', runShown);
$('compare').addEventListener('click', compareShown);
$('quantize').addEventListener('click', () => quant.open());
$('cancel').addEventListener('click', () => runner.cancel());
$('export-svg').addEventListener('click', exportSvg);
$('export-png').addEventListener('click', () => exportPng().catch((e) => setStatus(e.message, { error: true })));
$('search').addEventListener('input', (e) => search(e.target.value));
$('overlay').addEventListener('click', (e) => e.target.dataset.overlay && setOverlay(e.target.dataset.overlay));
$('direction').addEventListener('click', () => setDirection(state.direction === 'TB' ? 'LR' : 'TB'));
$('collapse').addEventListener('click', () => setCollapse(!state.collapse));
$('nodedata').addEventListener('change', async (e) => {
  const f = e.target.files[0];
  if (!f) return;
  try {
    const d = parseNodeData(await f.text());
    const which = /time|ms/i.test(d.label ?? '') ? 'time' : 'error';
    state.data[which] = d;
    await setOverlay(which);
  } catch (err) {
    setStatus(`${f.name}: ${err.message}`, { error: true });
  }
});
$('graph').addEventListener('click', (e) => {
  const el = e.target.closest('.wq-node');
  // A collapsed region opens up again; a node shows its panel.
  if (el?.dataset.regionGroup) setCollapse(false);
  else if (el) select(Number(el.dataset.nodeId));
});
addEventListener('dragover', (e) => {
  e.preventDefault();
  $('drop').hidden = false;
});
addEventListener('dragleave', (e) => {
  if (e.relatedTarget === null) $('drop').hidden = true;
});
addEventListener('drop', (e) => {
  e.preventDefault();
  $('drop').hidden = true;
  const f = e.dataTransfer.files[0];
  if (f) openFile(f);
});

// For the browser tests and the console: the app's entry points.
globalThis.wasmqInspector = {
  state,
  openDemo,
  setOverlay,
  setDirection,
  setCollapse,
  search,
  select,
  runShown,
  quant,
  exportSvg,
  exportPng,
  /** Pans the view to node `id` (the graph opens zoomed in: a node may be outside the view). */
  reveal(id) {
    const el = $('graph').querySelector(`.wq-node[data-node-id="${id}"]`);
    if (el) panTo(el);
  },
  /** Lays out a synthetic n-node graph in the Worker; reports layout ms and the main thread's longest stall. */
  async layoutBenchmark(n) {
    const { syntheticGraph } = await import('./synthetic.mjs');
    const drawable = toDrawable(syntheticGraph(n));
    let last = performance.now();
    let maxGap = 0;
    let ticks = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
    }, 10);
    const t0 = performance.now();
    const { ms } = await layoutInWorker(drawable);
    const wall = performance.now() - t0;
    clearInterval(timer);
    return { nodes: drawable.nodes.length, edges: drawable.edges.length, workerMs: ms, wallMs: wall, maxMainThreadGapMs: maxGap, ticks };
  },
};

// Whatever fails outside a handled path still reaches the status line.
addEventListener('unhandledrejection', (e) => setStatus(`error: ${e.reason?.message ?? e.reason}`, { error: true }));
addEventListener('error', (e) => setStatus(`error: ${e.message}`, { error: true }));

const demoParam = new URLSearchParams(location.search).get('demo');
if (demoParam) {
  $('demo').value = demoParam;
  openDemo(demoParam);
}
