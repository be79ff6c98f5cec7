// Bundled demos: draw a digit (mnist-8 float and int8, live prediction),
// super-resolution on a sample image, a segmentation mask, voice activity
// over an audio file or the microphone (Silero VAD v3.1, float vs int8),
// and two int8 graphs to inspect. The int8 models of the first three are quantized by
// wasmq in the page when the demo opens (the float model shows first; the
// result is cached for the session). Model files come from /models/ (served
// from ../shared by the vite config; never copied into the repository).
import { parseFloatTensor } from './tensorproto.mjs';
import { parseNpy } from '../src/js/npy.mjs';

// The ten bundled digits (demo/digits.npy, uint8 [10, 28, 28]): mnist-8's calibration set.
const DIGITS_URL = new URL('../demo/digits.npy', import.meta.url);

async function digitSamples() {
  const r = await fetch(DIGITS_URL);
  if (!r.ok) throw new Error(`cannot fetch ${DIGITS_URL.href}: HTTP ${r.status}`);
  const d = parseNpy(new Uint8Array(await r.arrayBuffer()));
  const [count, h, w] = d.dims;
  return Array.from({ length: count }, (_, k) => ({ Input3: { data: Float32Array.from(d.data.subarray(k * h * w, (k + 1) * h * w)), dims: [1, 1, h, w] } }));
}

async function fetchBytes(name) {
  const r = await fetch(`./models/${name}`);
  if (!r.ok) throw new Error(`cannot fetch ./models/${name}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

function build(tag, props, kids) {
  const e = Object.assign(document.createElement(tag), props);
  for (const k of kids) e.append(k);
  return e;
}

function card(title, ...kids) {
  return build('div', { className: 'demo-card' }, [build('h3', { textContent: title }, []), ...kids]);
}

/** Grey image (values 0..1, h x w) into a canvas. */
function greyCanvas(data, w, h, { scale = 1 } = {}) {
  const c = build('canvas', { width: w, height: h }, []);
  c.style.width = `${w * scale}px`;
  c.style.height = `${h * scale}px`;
  const img = c.getContext('2d').createImageData(w, h);
  for (let i = 0; i < w * h; i++) {
    const v = Math.max(0, Math.min(255, Math.round(data[i] * 255)));
    img.data.set([v, v, v, 255], i * 4);
  }
  c.getContext('2d').putImageData(img, 0, 0);
  return c;
}

function softmax(logits) {
  const m = Math.max(...logits);
  const e = logits.map((x) => Math.exp(x - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

// --- draw a digit --------------------------------------------------------------

async function mnist({ panel, openModel, runModel, setStatus, quantizeLoaded }) {
  const [f32, sample, calib] = await Promise.all([fetchBytes('mnist-8.onnx'), fetchBytes('mnist-8-digits.pb'), digitSamples()]);
  const digit = parseFloatTensor(sample);
  // Runs use the test set's digit; calibration the ten bundled digits (the two never overlap).
  await openModel('mnist-float', 'mnist-8 (float)', f32, { feeds: { Input3: { data: digit.data, dims: digit.dims } }, samples: calib });
  let int8Key = null;
  const pad = build('canvas', { width: 224, height: 224, className: 'pad' }, []);
  pad.style.cursor = 'crosshair';
  pad.style.background = '#000';
  const ctx = pad.getContext('2d');
  // Start from the sample digit of the model's test set (values 0..255).
  const small = greyCanvas(Float32Array.from(digit.data, (v) => v / 255), 28, 28);
  ctx.imageSmoothingEnabled = true;
  ctx.drawImage(small, 0, 0, 224, 224);
  const out = build('div', { className: 'mnist-out' }, []);
  const clear = build('button', { className: 'btn', textContent: 'Clear' }, []);
  clear.style.cssText = 'background:#fff;color:#111;border-color:#cbd5e1';
  panel.replaceChildren(card('Draw a digit', pad, clear, build('div', { className: 'cap', textContent: 'Draw with the mouse; both models predict live.' }, [])), card('Prediction: float vs int8 (quantized by wasmq in this page)', out));
  panel.hidden = false;

  let busy = false;
  let again = false;
  async function predict() {
    if (busy) return void (again = true);
    busy = true;
    try {
      const c28 = build('canvas', { width: 28, height: 28 }, []);
      const c = c28.getContext('2d');
      c.drawImage(pad, 0, 0, 28, 28);
      const px = c.getImageData(0, 0, 28, 28).data;
      const data = new Float32Array(784);
      for (let i = 0; i < 784; i++) data[i] = px[i * 4];
      const feeds = { Input3: { data, dims: [1, 1, 28, 28] } };
      const rf = await runModel('mnist-float', feeds, { label: 'float' });
      const ri = int8Key ? await runModel(int8Key, feeds, { label: 'int8' }) : null;
      const pf = softmax([...rf.results.Plus214_Output_0.data]);
      const pi = ri ? softmax([...ri.results.Plus214_Output_0.data]) : pf.map(() => 0);
      const best = (p) => p.indexOf(Math.max(...p));
      out.replaceChildren(
        build('div', { className: 'pred', textContent: `${best(pf)} · ${ri ? best(pi) : '…'}` }, []),
        build('div', { className: 'cap', textContent: ri ? `float ${rf.ms.toFixed(2)} ms · int8 ${ri.ms.toFixed(2)} ms (blue float, green int8)` : `float ${rf.ms.toFixed(2)} ms · int8: quantizing…` }, []),
        build(
          'div',
          { className: 'bars' },
          pf.flatMap((p, d) => [
            build('span', { textContent: String(d) }, []),
            build('div', {}, [barDiv(p, 'b f'), barDiv(pi[d], 'b')]),
            build('span', { textContent: `${(pi[d] * 100).toFixed(0)}%` }, []),
          ]),
        ),
      );
      out.dataset.float = String(best(pf));
      if (ri) out.dataset.int8 = String(best(pi));
      setStatus(ri ? `mnist-8: float says ${best(pf)}, int8 (wasmq) says ${best(pi)}` : `mnist-8: float says ${best(pf)}; quantizing…`);
    } finally {
      busy = false;
      if (again) {
        again = false;
        predict();
      }
    }
  }
  let drawing = false;
  const at = (e) => {
    const r = pad.getBoundingClientRect();
    return [((e.clientX - r.left) / r.width) * 224, ((e.clientY - r.top) / r.height) * 224];
  };
  pad.addEventListener('pointerdown', (e) => {
    drawing = true;
    ctx.strokeStyle = '#fff';
    ctx.lineWidth = 18;
    ctx.lineCap = 'round';
    ctx.beginPath();
    ctx.moveTo(...at(e));
  });
  pad.addEventListener('pointermove', (e) => {
    if (!drawing) return;
    ctx.lineTo(...at(e));
    ctx.stroke();
    predict();
  });
  addEventListener('pointerup', () => {
    if (drawing) predict();
    drawing = false;
  });
  clear.addEventListener('click', () => {
    ctx.fillStyle = '#000';
    ctx.fillRect(0, 0, 224, 224);
    predict();
  });
  await predict();
  // Quantized on demo open with the ten bundled digits (once per session).
  const q = await quantizeLoaded('mnist-float', { samples: calib, cacheKey: 'demo:mnist', label: 'mnist-8 (int8, quantized by wasmq)' });
  int8Key = q.model.key;
  await predict();
  return () => {};
}

function barDiv(p, cls) {
  const d = build('div', { className: cls }, []);
  d.style.width = `${Math.max(1, p * 160)}px`;
  d.style.marginBottom = '1px';
  return d;
}

// --- super-resolution ----------------------------------------------------------

async function superres({ panel, openModel, runModel, setStatus, quantizeLoaded }) {
  const [model, sample] = await Promise.all([fetchBytes('super-resolution-10.onnx'), fetchBytes('super-resolution-input.pb')]);
  const x = parseFloatTensor(sample);
  const feeds = { input: { data: x.data, dims: x.dims } };
  await openModel('sr-float', 'super-resolution-10 (float)', model, { options: { inputShapes: { input: [1, 1, 224, 224] } }, feeds, samples: [feeds] });
  const r = await runModel('sr-float', feeds, { label: 'super-resolution' });
  const y = r.results.output;
  const [h, w] = y.dims.slice(2);
  const int8Card = card('int8 model output: quantizing in the page…');
  panel.replaceChildren(
    card('Input 224×224 (scaled up ×3 by the browser)', greyCanvas(x.data, 224, 224, { scale: 1.5 })),
    card(`Float model output ${w}×${h} (${r.ms.toFixed(1)} ms)`, greyCanvas(y.data, w, h, { scale: 0.5 })),
    int8Card,
  );
  panel.hidden = false;
  setStatus(`super-resolution-10: 224×224 → ${w}×${h} in ${r.ms.toFixed(1)} ms (float); quantizing…`);
  // Calibrated on the bundled input itself, once per session.
  const q = await quantizeLoaded('sr-float', { samples: [feeds], cacheKey: 'demo:superres' });
  const y8 = q.rq.results.output;
  int8Card.replaceChildren(build('h3', { textContent: `int8 model output ${w}×${h} (${q.rq.ms.toFixed(1)} ms; float ${q.rf.ms.toFixed(1)} ms)` }, []), greyCanvas(y8.data, w, h, { scale: 0.5 }));
  int8Card.dataset.int8 = 'done';
  setStatus(`super-resolution-10: 224×224 → ${w}×${h}: float ${q.rf.ms.toFixed(1)} ms, int8 ${q.rq.ms.toFixed(1)} ms (${q.rq.method})`);
  return () => {};
}

// --- segmentation --------------------------------------------------------------

function maskOverlay(data, mask, W, H) {
  const over = build('canvas', { width: W, height: H }, []);
  over.style.width = `${W * 1.5}px`;
  over.style.height = `${H * 1.5}px`;
  const ctx = over.getContext('2d');
  const id = ctx.createImageData(W, H);
  for (let i = 0; i < W * H; i++) {
    const v = data[i] * 255;
    const m = Math.max(0, Math.min(1, mask[i]));
    id.data.set([v * (1 - m) + 46 * m, v * (1 - m) + 139 * m, v * (1 - m) + 87 * m, 255], i * 4);
  }
  ctx.putImageData(id, 0, 0);
  return over;
}

async function segmentation({ panel, openModel, runModel, setStatus, quantizeLoaded }) {
  const [model, photo] = await Promise.all([fetchBytes('segmentation.onnx'), fetchBytes('super-resolution-input.pb')]);
  const H = 96;
  const W = 160;
  // The bundled photo (224x224 grey) cropped to 160x96 as B, G, R; no prior mask.
  const img = parseFloatTensor(photo).data;
  const data = new Float32Array(4 * H * W);
  for (let yy = 0; yy < H; yy++) {
    for (let xx = 0; xx < W; xx++) {
      const v = img[(yy * 2 + 16) * 224 + Math.min(223, Math.round(xx * 1.4))];
      for (let c = 0; c < 3; c++) data[c * H * W + yy * W + xx] = v;
    }
  }
  const feeds = { bgrm: { data, dims: [1, 4, H, W] } };
  await openModel('seg', 'teams-segmentation (float)', model, { options: { inputShapes: { bgrm: [1, 4, H, W] } }, feeds, samples: [feeds] });
  const r = await runModel('seg', feeds, { label: 'segmentation' });
  const mask = r.results.mask.data;
  const int8Card = card('int8 mask: quantizing in the page…');
  // The masks are also drawn stretched to the float mask's maximum, so a faint mask and the int8 gap stay visible.
  const top = Math.max(1e-6, ...mask);
  const stretched = (m) => Float32Array.from(m, (v) => v / top);
  const int8Mask = card('int8 mask (same stretch)');
  panel.replaceChildren(
    card('Input', greyCanvas(data, W, H, { scale: 1.5 })),
    card(`Float mask (white = ${top.toPrecision(2)})`, greyCanvas(stretched(mask), W, H, { scale: 1.5 })),
    int8Mask,
    card(`Float mask on input (${r.ms.toFixed(1)} ms)`, maskOverlay(data, mask, W, H)),
    int8Card,
  );
  panel.hidden = false;
  setStatus(`segmentation: mask ${W}×${H} in ${r.ms.toFixed(1)} ms (float); quantizing…`);
  // Calibrated on the demo's input, once per session.
  const q = await quantizeLoaded('seg', { samples: [feeds], cacheKey: 'demo:segmentation' });
  const mask8 = q.rq.results.mask.data;
  let differ = 0;
  for (let i = 0; i < mask.length; i++) differ += mask[i] >= 0.5 !== mask8[i] >= 0.5;
  int8Card.replaceChildren(build('h3', { textContent: `int8 mask on input (${q.rq.ms.toFixed(1)} ms)` }, []), maskOverlay(data, mask8, W, H), build('div', { className: 'cap', textContent: `${differ} of ${mask.length} pixels on the other side of 0.5 than float` }, []));
  int8Card.dataset.int8 = 'done';
  int8Card.dataset.differ = String(differ);
  int8Mask.append(greyCanvas(stretched(mask8), W, H, { scale: 1.5 }));
  setStatus(`segmentation: mask ${W}×${H}: float ${q.rf.ms.toFixed(1)} ms, int8 ${q.rq.ms.toFixed(1)} ms (${q.rq.method}); ${differ} pixels differ at 0.5`);
  return () => {};
}

// --- voice activity (Silero VAD v3.1) ---------------------------------------------

const RATE = 16000;
const CHUNK = 1536; // 96 ms, the chunk v3.1 was exported for

/** An audio file's samples, mixed to mono and resampled to 16 kHz by the browser. */
async function decodeAudio(bytes) {
  const buf = await new OfflineAudioContext(1, 1, RATE).decodeAudioData(bytes);
  const mono = new Float32Array(buf.length);
  for (let c = 0; c < buf.numberOfChannels; c++) {
    const ch = buf.getChannelData(c);
    for (let i = 0; i < mono.length; i++) mono[i] += ch[i] / buf.numberOfChannels;
  }
  return mono;
}

/**
 * Feeds one 1536-sample chunk after another to a loaded v3.1, carrying its
 * h/c state from each run's hn/cn to the next run's h0/c0.
 */
function vadStream(runModel, key, label) {
  let h = new Float32Array(128);
  let c = new Float32Array(128);
  return {
    async push(x) {
      const feeds = { input: { data: x, dims: [1, CHUNK] }, h0: { data: h, dims: [2, 1, 64] }, c0: { data: c, dims: [2, 1, 64] } };
      const r = await runModel(key, feeds, { label });
      h = r.results.hn.data;
      c = r.results.cn.data;
      return { p: r.results.output.data[1], ms: r.ms, feeds };
    },
  };
}

/** Speech probability over time: float (blue) and int8 (green), the 0.5 threshold dashed. */
function drawCurves(canvas, curves) {
  const ctx = canvas.getContext('2d');
  const { width: W, height: H } = canvas;
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, W, H);
  ctx.strokeStyle = '#94a3b8';
  ctx.setLineDash([4, 4]);
  ctx.beginPath();
  ctx.moveTo(0, H / 2);
  ctx.lineTo(W, H / 2);
  ctx.stroke();
  ctx.setLineDash([]);
  const n = Math.max(1, ...curves.map((c) => c.values.length));
  for (const { values, colour } of curves) {
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2;
    ctx.beginPath();
    values.forEach((p, i) => ctx[i ? 'lineTo' : 'moveTo']((i / Math.max(1, n - 1)) * (W - 1), (1 - p) * (H - 4) + 2));
    ctx.stroke();
  }
}

async function vad({ panel, openModel, runModel, setStatus, quantizeLoaded }) {
  const f32 = await fetchBytes('silero-vad-v3.1.onnx');
  const zeros = { input: { data: new Float32Array(CHUNK), dims: [1, CHUNK] }, h0: { data: new Float32Array(128), dims: [2, 1, 64] }, c0: { data: new Float32Array(128), dims: [2, 1, 64] } };
  await openModel('vad-float', 'silero-vad-v3.1 (float)', f32, { options: { inputShapes: { input: [1, CHUNK] } }, feeds: zeros });
  const file = build('input', { type: 'file', accept: 'audio/*,.wav,.mp3,.ogg,.flac', id: 'vad-file' }, []);
  const mic = build('button', { className: 'btn', textContent: 'Microphone', id: 'vad-mic', title: 'Listen live (the page asks for the microphone)' }, []);
  mic.style.cssText = 'background:#fff;color:#111;border-color:#cbd5e1';
  mic.disabled = !navigator.mediaDevices?.getUserMedia;
  const canvas = build('canvas', { width: 720, height: 160, id: 'vad-curves' }, []);
  const info = build('div', { className: 'cap', id: 'vad-info', textContent: 'Open an audio file (any rate; resampled to 16 kHz) or use the microphone.' }, []);
  const out = card('Speech probability per 96 ms chunk: float (blue) vs int8 quantized by wasmq in this page (green)', canvas, info);
  panel.replaceChildren(card('Audio', file, mic), out);
  panel.hidden = false;
  setStatus('Voice activity: open an audio file or use the microphone.');
  let int8Key = null;
  let stopMic = null;

  // Quantized once per session, calibrated on the first recording's chunks
  // (every 4th, with the float model's own state).
  async function ensureInt8(samples) {
    if (int8Key) return;
    const q = await quantizeLoaded('vad-float', { samples, cacheKey: 'demo:vad', show: false, label: 'silero-vad-v3.1 (int8, quantized by wasmq)' });
    int8Key = q.model.key;
  }

  async function analyse(samples, name) {
    const chunks = Math.floor(samples.length / CHUNK);
    if (chunks === 0) throw new Error(`${name}: shorter than one 96 ms chunk`);
    const pf = [];
    const calib = [];
    let msF = 0;
    const sf = vadStream(runModel, 'vad-float', 'float chunk');
    for (let k = 0; k < chunks; k++) {
      const r = await sf.push(samples.slice(k * CHUNK, (k + 1) * CHUNK));
      pf.push(r.p);
      msF += r.ms;
      if (k % 4 === 0) calib.push(r.feeds);
    }
    drawCurves(canvas, [{ values: pf, colour: '#2563eb' }]);
    setStatus(`${name}: float done; quantizing…`);
    await ensureInt8(calib);
    const pi = [];
    let msI = 0;
    const si = vadStream(runModel, int8Key, 'int8 chunk');
    for (let k = 0; k < chunks; k++) {
      const r = await si.push(samples.slice(k * CHUNK, (k + 1) * CHUNK));
      pi.push(r.p);
      msI += r.ms;
    }
    drawCurves(canvas, [{ values: pf, colour: '#2563eb' }, { values: pi, colour: '#16a34a' }]);
    const same = pf.filter((p, k) => p > 0.5 === pi[k] > 0.5).length;
    const speech = pf.filter((p) => p > 0.5).length;
    info.textContent = `${name}: ${(samples.length / RATE).toFixed(1)} s, ${chunks} chunks; float says speech in ${speech}, int8 in ${pi.filter((p) => p > 0.5).length}; decisions equal on ${same} of ${chunks} (${((100 * same) / chunks).toFixed(1)}%); per chunk float ${(msF / chunks).toFixed(2)} ms, int8 ${(msI / chunks).toFixed(2)} ms`;
    Object.assign(out.dataset, { chunks: String(chunks), same: String(same), speech: String(speech), done: 'true' });
    setStatus(info.textContent);
  }

  file.addEventListener('change', async () => {
    const f = file.files?.[0];
    if (!f) return;
    try {
      out.dataset.done = 'false';
      setStatus(`Decoding ${f.name}…`);
      await analyse(await decodeAudio(await f.arrayBuffer()), f.name);
    } catch (e) {
      setStatus(`voice activity: ${e.message}`, { error: true });
    }
  });

  // Live: 16 kHz capture, each full chunk through both models as it arrives.
  mic.addEventListener('click', async () => {
    if (stopMic) return stopMic();
    try {
      if (!int8Key) throw new Error('open an audio file first: the int8 model is calibrated on it');
      const media = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1 } });
      const ac = new AudioContext({ sampleRate: RATE });
      const src = ac.createMediaStreamSource(media);
      const proc = ac.createScriptProcessor(4096, 1, 1);
      const sf = vadStream(runModel, 'vad-float', 'float chunk');
      const si = vadStream(runModel, int8Key, 'int8 chunk');
      const pf = [];
      const pi = [];
      let pending = new Float32Array(0);
      let busy = Promise.resolve();
      proc.onaudioprocess = (e) => {
        const next = new Float32Array(pending.length + e.inputBuffer.length);
        next.set(pending);
        next.set(e.inputBuffer.getChannelData(0), pending.length);
        pending = next;
        while (pending.length >= CHUNK) {
          const x = pending.slice(0, CHUNK);
          pending = pending.slice(CHUNK);
          busy = busy.then(async () => {
            pf.push((await sf.push(x)).p);
            pi.push((await si.push(x)).p);
            drawCurves(canvas, [{ values: pf.slice(-300), colour: '#2563eb' }, { values: pi.slice(-300), colour: '#16a34a' }]);
          });
        }
      };
      src.connect(proc);
      proc.connect(ac.destination);
      mic.textContent = 'Stop';
      stopMic = () => {
        proc.disconnect();
        src.disconnect();
        for (const t of media.getTracks()) t.stop();
        ac.close();
        mic.textContent = 'Microphone';
        stopMic = null;
      };
    } catch (e) {
      setStatus(`microphone: ${e.message}`, { error: true });
    }
  });
  return () => stopMic?.();
}

async function graphOnly(file, label, { openModel, setStatus }) {
  const m = await openModel(file, label, await fetchBytes(file));
  setStatus(`${label}: ${m.graph.summary}`);
  return () => {};
}

export async function startDemo(name, ctx) {
  if (name === 'mnist') return mnist(ctx);
  if (name === 'superres') return superres(ctx);
  if (name === 'segmentation') return segmentation(ctx);
  if (name === 'vad') return vad(ctx);
  if (name === 'smallcnn') return graphOnly('smallcnn-qdq.onnx', 'smallcnn (QDQ int8)', ctx);
  if (name === 'kws') return graphOnly('kws-dscnn-int8.onnx', 'kws-dscnn (int8)', ctx);
  throw new Error(`no demo ${name}`);
}
