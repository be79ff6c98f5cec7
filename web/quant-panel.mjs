// Quantize in the page: the shown float model is quantized by wasmq's
// quantizer (quantize() of the package, the lazily fetched quant build) in a
// Worker of its own, with the model's bundled sample input, images dropped on
// the panel (decoded by the browser, made tensors by the package's default
// image spec) or N seeded random samples; progress {done, total} and a Cancel
// that terminates that Worker.
// The int8 result is loaded beside the float model (the graph picker switches
// between them), both run on the same input, outputs and times side by side,
// and the QDQ .onnx and the report JSON can be downloaded.
import { Runner } from './runner.mjs';
import { fmtNum } from '../src/js/graph/data.mjs';
import { escapeXml } from '../src/js/graph/render.mjs';
import { decodeImage, imageToTensor, resolveImageSpec } from '../src/js/images.mjs';

const $ = (id) => document.getElementById(id);

/** Largest |a - b| and the SNR of b against a (dB; Infinity when equal). */
function gap(a, b) {
  let maxAbs = 0;
  let sig = 0;
  let noise = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Number(a[i]) - Number(b[i]);
    maxAbs = Math.max(maxAbs, Math.abs(d));
    sig += Number(a[i]) ** 2;
    noise += d * d;
  }
  return { maxAbs, snr: noise === 0 ? Infinity : 10 * Math.log10(sig / noise) };
}

const argmax = (data) => {
  let best = 0;
  for (let i = 1; i < data.length; i++) if (data[i] > data[best]) best = i;
  return best;
};

function outputHtml(name, t) {
  const head = [...t.data.slice(0, 5)].map((v) => fmtNum(Number(v))).join(', ');
  const top = t.data.length <= 1000 ? ` · argmax <b data-argmax="${argmax(t.data)}">${argmax(t.data)}</b>` : '';
  return `<div class="mono" data-output="${escapeXml(name)}">${escapeXml(name)} [${t.dims.join('×')}]${top}<br><span class="muted">${head}${t.data.length > 5 ? ', …' : ''}</span></div>`;
}

/**
 * app: {state, openModel, showModel, runModel, setStatus, download, randomFeeds, isQuantized}.
 * Returns {quantizeLoaded, open, refresh}.
 */
export function createQuantPanel(app) {
  const worker = new Runner({ lazy: true }); // created on the first quantization
  const cache = new Map(); // cacheKey -> quantize reply (demos: once per session)
  let active = null; // {done, total} while calibrating
  const images = []; // decoded images dropped on the panel: {width, height, data}

  const panel = $('quant-panel');
  const showError = (text) => {
    $('q-error').textContent = text;
    $('q-error').hidden = !text;
  };

  function setProgress(p) {
    active = p;
    const on = p !== null;
    $('q-progress').hidden = !on;
    $('q-cancel').hidden = !on;
    $('q-start').disabled = on;
    if (!on) $('q-progress-text').textContent = '';
    if (on) {
      $('q-progress').value = p.total ? p.done / p.total : 0;
      $('q-progress-text').textContent = p.total === 0 ? 'writing the dynamic form' : `calibrating ${p.done} of ${p.total ?? '?'} samples`;
      panel.dataset.done = String(p.done);
      panel.dataset.total = String(p.total);
    }
  }

  /** Opens the panel for the shown model (the Quantize button). */
  function open() {
    const m = app.state.models.get(app.state.shown);
    if (!m) return;
    panel.hidden = false;
    $('q-model').textContent = m.name;
    const hasSample = Boolean(m.samples?.length);
    $('q-sample').disabled = !hasSample;
    $('q-sample-label').classList.toggle('muted', !hasSample);
    if (!hasSample) $('q-random').checked = true;
    else if (!$('q-random').checked) $('q-sample').checked = true;
    showError('');
  }

  /**
   * Quantizes the loaded float model `key` (its bytes) and loads the result
   * as `${key}~int8`. calib: {samples: [feeds], random: N}; cacheKey: reuse
   * an earlier result of this session. Resolves to {model: the int8 model
   * entry, rf, rq: the float and int8 runs on the float model's feeds}.
   */
  async function quantizeLoaded(key, { samples = [], random = 0, notes = [], cacheKey, show = true, label, dynamic = false } = {}) {
    const m = app.state.models.get(key);
    if (!m) throw new Error(`no model '${key}' loaded`);
    panel.hidden = false;
    $('q-model').textContent = m.name;
    showError('');
    $('q-result').hidden = true;
    let r = cacheKey && cache.get(cacheKey);
    const cached = Boolean(r);
    if (!r) {
      const total = samples.length + random;
      setProgress({ done: 0, total });
      app.setStatus(dynamic ? `Quantizing ${m.name}: dynamic int8…` : `Quantizing ${m.name}: calibrating on ${total} sample${total === 1 ? '' : 's'}…`, { progress: 0 });
      try {
        const bytes = m.bytes.slice();
        // Random samples take the shapes the runs use (symbolic dims bound as in Run).
        const shapes = Object.fromEntries(Object.entries(m.feeds ?? app.randomFeeds(m)).map(([n, f]) => [n, f.dims]));
        r = await worker.call({ type: 'quantize', bytes, samples, random, shapes, notes, dynamic }, (p) => {
          setProgress(p);
          app.setStatus(`Quantizing ${m.name}: ${p.done} of ${p.total} calibration samples`, { progress: p.total ? p.done / p.total : 0 });
        }, [bytes.buffer]);
      } catch (e) {
        const text = e.cancelled ? `Quantization of ${m.name} cancelled after ${active?.done ?? 0} of ${active?.total ?? '?'} samples.` : `quantize ${m.name}: ${e.message}`;
        showError(e.cancelled ? '' : text);
        app.setStatus(text, { error: !e.cancelled });
        panel.dataset.state = e.cancelled ? 'cancelled' : 'error';
        throw e;
      } finally {
        setProgress(null);
      }
      if (cacheKey) cache.set(cacheKey, r);
    }
    const name = label ?? `${m.name.replace(/\.onnx$/i, '').replace(/ \(float\)$/, '')} (int8, wasmq)`;
    const int8 = await app.openModel(`${key}~int8`, name, r.onnx, { show: false, options: m.options, feeds: m.feeds, samples: m.samples });
    int8.quant = { floatKey: key, onnx: r.onnx, reportJson: r.reportJson, summary: r.summary, samples: r.samples, calibrateMs: r.calibrateMs, finishMs: r.finishMs };
    m.int8Key = int8.key;
    if (show) await app.showModel(int8.key);
    panel.dataset.state = 'done';
    panel.dataset.int8 = int8.key;
    const warnings = JSON.parse(r.reportJson).warnings ?? [];
    const calibrated = dynamic ? 'no calibration' : `${r.samples} calibration sample${r.samples === 1 ? '' : 's'} in ${fmtNum(r.calibrateMs)} ms`;
    $('q-summary').textContent = `${r.summary} · ${calibrated}, model written in ${fmtNum(r.finishMs)} ms${cached ? ' (cached for this session)' : ''}${warnings.map((w) => `\n⚠ ${w}`).join('')}`;
    app.setStatus(`${name}: ${int8.graph.summary}`);
    const runs = await runBoth(key, int8.key);
    return { model: int8, ...runs };
  }

  /** Runs the float and the int8 model on the same input (5 repeats each): outputs and times side by side. */
  async function runBoth(floatKey, int8Key) {
    const f = app.state.models.get(floatKey);
    const q = app.state.models.get(int8Key);
    const feeds = f.feeds ?? app.randomFeeds(f);
    const rf = await app.runModel(floatKey, feeds, { repeats: 5, label: `Running ${f.name} ×5` });
    const rq = await app.runModel(int8Key, feeds, { repeats: 5, label: `Running ${q.name} ×5` });
    const col = (m, r, side) => `<div class="q-col" data-side="${side}" data-ms="${r.ms.toFixed(3)}">
      <h3>${escapeXml(m.name)}</h3>
      <div class="q-part">${escapeXml(m.graph.summary)}</div>
      <div class="q-ms"><b>${fmtNum(r.ms)} ms</b> per run (${escapeXml(r.method)})</div>
      ${Object.entries(r.results).map(([n, t]) => outputHtml(n, t)).join('')}</div>`;
    const gaps = Object.keys(rf.results)
      .filter((n) => rq.results[n])
      .map((n) => ({ n, ...gap(rf.results[n].data, rq.results[n].data) }));
    $('q-cols').innerHTML =
      col(f, rf, 'float') +
      col(q, rq, 'int8') +
      `<div class="q-col"><h3>int8 vs float</h3>${gaps
        .map((g) => `<div class="mono" data-gap="${escapeXml(g.n)}">${escapeXml(g.n)}: max |Δ| ${fmtNum(g.maxAbs)}, SNR ${Number.isFinite(g.snr) ? `${fmtNum(g.snr)} dB` : '∞ (equal)'}</div>`)
        .join('')}<div class="muted">int8 speed-up (float ms / int8 ms): ${fmtNum(rf.ms / rq.ms)}×</div></div>`;
    $('q-result').hidden = false;
    panel.dataset.ran = 'true';
    return { rf, rq };
  }

  function download(kind) {
    const m = app.state.models.get(panel.dataset.int8);
    if (!m?.quant) return;
    const base = app.state.models.get(m.quant.floatKey).name.replace(/\.onnx$/i, '').replace(/ \(float\)$/, '').replace(/[^\w.-]+/g, '_');
    if (kind === 'onnx') app.download(new Blob([m.quant.onnx], { type: 'application/octet-stream' }), `${base}-int8.onnx`);
    else app.download(new Blob([m.quant.reportJson], { type: 'application/json' }), `${base}-quant-report.json`);
  }

  /** Decodes dropped image files and adds them to the calibration images. */
  async function addImages(files) {
    const picked = [...files].filter((f) => /^image\/(png|jpeg)$/.test(f.type) || /\.(png|jpe?g)$/i.test(f.name));
    if (picked.length === 0) {
      showError('drop PNG or JPEG images here to calibrate with them (an .onnx model opens outside this panel)');
      return;
    }
    showError('');
    for (const f of picked) {
      try {
        images.push(await decodeImage(f));
      } catch (e) {
        showError(`${f.name}: ${e.message}`);
        return;
      }
    }
    $('q-images').disabled = false;
    $('q-images').checked = true;
    $('q-images-label').classList.remove('muted');
    $('q-images-text').textContent = `${images.length} dropped image${images.length === 1 ? '' : 's'} (drop more)`;
    panel.dataset.images = String(images.length);
  }

  /** The dropped images as feeds of the shown model's input (its run shape) by the default image spec. */
  function imageSamples(m) {
    const feeds = m.feeds ?? app.randomFeeds(m);
    const inputs = Object.entries(feeds).map(([name, f]) => ({ name, dtype: 'float32', shape: f.dims }));
    const spec = resolveImageSpec({}, inputs);
    const note = `images preprocessed by the default spec (${spec.channels}, pixels / 255, ${spec.resize}): if the model was trained on another range or channel order, quantize with "images" in the config (npx wasmq quantize --calib DIR --config FILE)`;
    return { samples: images.map((img) => ({ [spec.input]: imageToTensor(img, spec) })), notes: [note] };
  }

  async function start() {
    const key = app.state.shown;
    const m = app.state.models.get(key);
    if (!m) return;
    if ($('q-images').checked && images.length) {
      let calib;
      try {
        calib = imageSamples(m);
      } catch (e) {
        showError(e.message);
        return;
      }
      try {
        await quantizeLoaded(key, calib);
      } catch {
        // shown in the panel and the status bar
      }
      return;
    }
    if ($('q-dynamic').checked) {
      try {
        await quantizeLoaded(key, { dynamic: true });
      } catch {
        // shown in the panel and the status bar
      }
      return;
    }
    const useSample = $('q-sample').checked && m.samples?.length;
    const n = Number($('q-n').value);
    if (!useSample && !(Number.isInteger(n) && n >= 1 && n <= 100000)) {
      showError(`N must be a whole number from 1 to 100000 (got ${$('q-n').value})`);
      return;
    }
    try {
      await quantizeLoaded(key, useSample ? { samples: m.samples } : { random: n });
    } catch {
      // shown in the panel and the status bar
    }
  }

  $('q-start').addEventListener('click', start);
  // Images dropped on the panel calibrate; the page's own drop (a model) is not reached.
  panel.addEventListener('dragover', (e) => {
    e.preventDefault();
    e.stopPropagation();
    panel.classList.add('dropping');
  });
  panel.addEventListener('dragleave', () => panel.classList.remove('dropping'));
  panel.addEventListener('drop', (e) => {
    e.preventDefault();
    e.stopPropagation();
    panel.classList.remove('dropping');
    $('drop').hidden = true;
    addImages(e.dataTransfer?.files ?? []).catch((err) => showError(err.message));
  });
  $('q-cancel').addEventListener('click', () => worker.cancel());
  $('q-close').addEventListener('click', () => {
    if (!active) panel.hidden = true;
  });
  $('q-rerun').addEventListener('click', () => {
    const m = app.state.models.get(panel.dataset.int8);
    if (m?.quant) runBoth(m.quant.floatKey, m.key).catch((e) => showError(`run: ${e.message}`));
  });
  $('q-onnx').addEventListener('click', () => download('onnx'));
  $('q-report').addEventListener('click', () => download('report'));

  return { quantizeLoaded, open, runBoth, get busy() { return active !== null; } };
}
