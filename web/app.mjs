// Placeholder page: load a model picked from disk, show its inputs, outputs
// and the core's describe() text, and run it on seeded random input.
import { load } from '../src/js/index.mjs';
import { randomArray } from '../src/js/random.mjs';

const $ = (id) => document.getElementById(id);
let model = null;
let runCount = 0;

function setStatus(text, isError = false) {
  $('status').textContent = text;
  $('status').className = isError ? 'error' : '';
}

const shapeText = (shape) => (shape ? `[${shape.map((d) => d ?? '?').join(', ')}]` : 'unknown');

function row(cells) {
  const tr = document.createElement('tr');
  for (const c of cells) {
    const td = document.createElement('td');
    if (c instanceof Node) td.append(c);
    else td.textContent = c;
    tr.append(td);
  }
  return tr;
}

function showModel(m) {
  const inputs = $('inputs').tBodies[0];
  const outputs = $('outputs').tBodies[0];
  inputs.replaceChildren();
  outputs.replaceChildren();
  for (const t of m.inputs) {
    const dims = document.createElement('input');
    dims.className = 'dims';
    dims.dataset.name = t.name;
    // Symbolic dims: batch (dim 0) defaults to 1, others to 64; editable.
    dims.value = (t.shape ?? []).map((d, i) => (typeof d === 'number' ? d : i === 0 ? 1 : 64)).join('x');
    inputs.append(row([t.name, t.dtype, shapeText(t.shape), dims]));
  }
  for (const t of m.outputs) outputs.append(row([t.name, t.dtype, shapeText(t.shape), '']));
  $('describe').textContent = m.describe();
  $('timing').textContent = '';
  $('model').hidden = false;
}

$('file').addEventListener('change', async (event) => {
  const file = event.target.files[0];
  if (!file) return;
  model?.dispose();
  model = null;
  $('model').hidden = true;
  setStatus(`loading ${file.name} (${(file.size / 1024).toFixed(0)} KiB)...`);
  try {
    const started = performance.now();
    model = await load(new Uint8Array(await file.arrayBuffer()));
    setStatus(`${file.name}: loaded in ${(performance.now() - started).toFixed(1)} ms`);
    showModel(model);
  } catch (e) {
    setStatus(`${file.name}: ${e.code ?? 'error'}: ${e.message}`, true);
  }
});

$('run').addEventListener('click', async () => {
  if (!model) return;
  try {
    const feeds = {};
    for (const box of document.querySelectorAll('input.dims')) {
      const text = box.value.trim();
      const dims = text === '' ? [] : text.split(/[x,\s]+/).map(Number);
      if (!dims.every((d) => Number.isInteger(d) && d >= 0)) throw new Error(`bad dims '${text}' for ${box.dataset.name}`);
      const info = model.inputs.find((t) => t.name === box.dataset.name);
      feeds[info.name] = { data: randomArray(info.dtype, dims.reduce((a, b) => a * b, 1), runCount), dims };
    }
    runCount++;
    const started = performance.now();
    const results = await model.run(feeds);
    const ms = performance.now() - started;
    const rows = $('outputs').tBodies[0].rows;
    model.outputs.forEach((t, i) => {
      const r = results[t.name];
      const preview = Array.from(r.data.slice(0, 4), (v) => Number(v).toPrecision(4)).join(', ');
      rows[i].cells[3].textContent = `[${r.dims.join(', ')}]  ${preview}${r.data.length > 4 ? ', ...' : ''}`;
    });
    $('timing').textContent = `run ${runCount}: ${ms.toFixed(1)} ms`;
    setStatus('');
  } catch (e) {
    setStatus(`run: ${e.code ?? 'error'}: ${e.message}`, true);
  }
});
