#!/usr/bin/env node
// Natural calibration and evaluation data made at run time from what Debian
// installs, never copied into the repository:
//   photos   crops of the real photographs Debian's python3-skimage ships
//            (skimage/data/*.png|jpg: astronaut, chelsea the cat, coffee,
//            a motorcycle, a rocket, the Hubble deep field, ...)
//   text     strips of its scanned page and text images (for OCR models)
//   people   the photographs of people among them (the astronaut, the
//            cameraman) and matplotlib's portrait of Grace Hopper
//            (python3-matplotlib, which python3-skimage depends on): for
//            person segmentation, whose output on scenes without a person
//            is a mask of near-zero probabilities
//   digits   the ten demo digits (demo/digits.npy) under seeded small
//            rotations, scalings and shifts, 0..255 like MNIST
// Every crop is drawn by a seeded generator, so a seed gives the same pixels
// on every machine with the same package.
//
//   node scripts/photo_samples.mjs OUT_DIR [--count N] [--size HxW] [--kind photos|text|people] [--seed S]
// writes OUT_DIR/0000.png ... (a folder `wasmq quantize --calib` reads).

import { readFileSync, readdirSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PNG } from 'pngjs';
import { decodeImageFile } from '../src/js/calib.mjs';
import { mulberry32 } from '../src/js/random.mjs';
import { parseNpy } from '../src/js/npy.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SKIMAGE_DATA = '/usr/lib/python3/dist-packages/skimage/data';

// Photographs of real scenes (not charts, masks or synthetic patterns).
const PHOTOS = [
  'astronaut.png', 'chelsea.png', 'coffee.png', 'motorcycle_left.png', 'rocket.jpg',
  'hubble_deep_field.jpg', 'camera.png', 'coins.png', 'moon.png', 'grass.png', 'gravel.png',
  'brick.png', 'ihc.png', 'retina.jpg', 'motorcycle_right.png', 'clock_motion.png',
];
const TEXT = ['page.png', 'text.png'];
const MATPLOTLIB_DATA = '/usr/share/matplotlib/mpl-data/sample_data';
const PEOPLE = ['astronaut.png', 'camera.png', path.join(MATPLOTLIB_DATA, 'grace_hopper.jpg')];

const cache = new Map();
function decoded(name) {
  if (!cache.has(name)) {
    const file = path.resolve(SKIMAGE_DATA, name);
    if (!existsSync(file)) throw new Error(`${file} is missing: install Debian's python3-skimage (scripts/setup.sh does)`);
    cache.set(name, decodeImageFile(readFileSync(file), file));
  }
  return cache.get(name);
}

/** The available files of a list (the package's set can vary by version). */
const present = (names) => names.filter((n) => existsSync(path.resolve(SKIMAGE_DATA, n)));

/** Copies the w x h rectangle at (x, y) of an RGBA image, mirrored when flip. */
function crop(img, x, y, w, h, flip) {
  const data = new Uint8Array(w * h * 4);
  for (let r = 0; r < h; r++) {
    for (let c = 0; c < w; c++) {
      const sc = flip ? x + w - 1 - c : x + c;
      const s = ((y + r) * img.width + sc) * 4;
      data.set(img.data.subarray(s, s + 4), (r * w + c) * 4);
    }
  }
  return { width: w, height: h, data };
}

/**
 * `count` seeded crops ({name, image}) with the aspect ratio height:width,
 * from the photos (kind 'photos'), text scans ('text') or photos of people
 * ('people'); each crop covers 30-100% of the largest such rectangle of its
 * source (text 15-50%, people 60-100% so the person stays in frame),
 * sources in turn.
 */
export function photoCrops(count, { height = 1, width = 1, kind = 'photos', seed = 1 } = {}) {
  const names = present(kind === 'text' ? TEXT : kind === 'people' ? PEOPLE : PHOTOS);
  if (names.length === 0) throw new Error(`no ${kind} images in ${SKIMAGE_DATA}: install python3-skimage`);
  const next = mulberry32(seed);
  const u = () => next() / 4294967296;
  const out = [];
  for (let i = 0; i < count; i++) {
    const name = names[i % names.length];
    const img = decoded(name);
    const aspect = height / width;
    let w = Math.min(img.width, Math.floor(img.height / aspect));
    const frac = kind === 'text' ? 0.15 + 0.35 * u() : kind === 'people' ? 0.6 + 0.4 * u() : 0.3 + 0.7 * u();
    w = Math.max(8, Math.floor(w * frac));
    const h = Math.max(2, Math.min(img.height, Math.round(w * aspect)));
    const x = Math.floor(u() * (img.width - w + 1));
    const y = Math.floor(u() * (img.height - h + 1));
    out.push({ name: `${name}@${x},${y},${w}x${h}`, image: crop(img, x, y, w, h, kind !== 'text' && u() < 0.5) });
  }
  return out;
}

/**
 * `count` MNIST-style digits (float32 [1,1,28,28], 0..255): the demo's ten,
 * each under a seeded rotation (+-12 degrees), scale (0.85-1.15) and shift (+-2 px).
 */
export function digitSamples(count, seed = 1) {
  const d = parseNpy(readFileSync(path.join(ROOT, 'demo/digits.npy')));
  const [n, H, W] = d.dims;
  const next = mulberry32(seed);
  const u = () => next() / 4294967296;
  const out = [];
  for (let i = 0; i < count; i++) {
    const src = d.data.subarray((i % n) * H * W, ((i % n) + 1) * H * W);
    const a = ((u() - 0.5) * 24 * Math.PI) / 180;
    const s = 0.85 + 0.3 * u();
    const tx = (u() - 0.5) * 4;
    const ty = (u() - 0.5) * 4;
    const data = new Float32Array(H * W);
    const cos = Math.cos(a) / s;
    const sin = Math.sin(a) / s;
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        // Inverse map about the centre, bilinear, zero outside.
        const dx = x - W / 2 + 0.5 - tx;
        const dy = y - H / 2 + 0.5 - ty;
        const sx = cos * dx + sin * dy + W / 2 - 0.5;
        const sy = -sin * dx + cos * dy + H / 2 - 0.5;
        const x0 = Math.floor(sx);
        const y0 = Math.floor(sy);
        let v = 0;
        for (const [xx, yy, wgt] of [[x0, y0, (1 - (sx - x0)) * (1 - (sy - y0))], [x0 + 1, y0, (sx - x0) * (1 - (sy - y0))], [x0, y0 + 1, (1 - (sx - x0)) * (sy - y0)], [x0 + 1, y0 + 1, (sx - x0) * (sy - y0)]]) {
          if (xx >= 0 && yy >= 0 && xx < W && yy < H) v += wgt * src[yy * W + xx];
        }
        data[y * W + x] = Math.round(Math.min(255, Math.max(0, v)));
      }
    }
    out.push({ name: `digit ${i % n} #${i}`, data, dims: [1, 1, H, W] });
  }
  return out;
}

function main(argv) {
  const out = argv[0];
  const opt = (name, fallback) => {
    const i = argv.indexOf(name);
    return i >= 0 && i + 1 < argv.length ? argv[i + 1] : fallback;
  };
  if (!out || out.startsWith('-')) {
    console.error('usage: node scripts/photo_samples.mjs OUT_DIR [--count N] [--size HxW] [--kind photos|text|people] [--seed S]');
    process.exit(2);
  }
  const [height, width] = opt('--size', '224x224').split('x').map(Number);
  const crops = photoCrops(Number(opt('--count', 64)), { height, width, kind: opt('--kind', 'photos'), seed: Number(opt('--seed', 1)) });
  mkdirSync(out, { recursive: true });
  crops.forEach(({ image }, k) => {
    const png = new PNG({ width: image.width, height: image.height });
    png.data = Buffer.from(image.data);
    writeFileSync(path.join(out, `${String(k).padStart(4, '0')}.png`), PNG.sync.write(png));
  });
  console.log(`wrote ${crops.length} crops to ${out} (from ${readdirSync(SKIMAGE_DATA).length} files in ${SKIMAGE_DATA})`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
