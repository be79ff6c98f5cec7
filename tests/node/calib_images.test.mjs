// Image calibration (src/js/images.mjs, the image folders of src/js/calib.mjs):
// the preprocessing spec's defaults and refusals, exact pixel arithmetic,
// and `npx wasmq quantize --calib DIR` on a folder of PNG and JPEG files
// (the native command refuses such a folder, saying where images are read).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import jpeg from 'jpeg-js';
import { resolveImageSpec, imageToTensor } from '../../src/js/images.mjs';
import { decodeImageFile } from '../../src/js/calib.mjs';
import { parseNpy } from '../../src/js/npy.mjs';
import { CLI, MODELS, NATIVE_CLI, REPO } from './helpers.mjs';

const MNIST_IN = [{ name: 'Input3', dtype: 'float32', shape: [1, 1, 28, 28] }];
const TEAMS_IN = [{ name: 'bgrm', dtype: 'float32', shape: ['batch_size', 4, 'height', 'width'] }];

test('images spec: defaults from the input, and each refusal says why', () => {
  const m = resolveImageSpec(undefined, MNIST_IN);
  assert.deepEqual([m.input, m.layout, m.channels, m.height, m.width, m.resize, m.scale], ['Input3', 'NCHW', 'GRAY', 28, 28, 'crop', 1 / 255]);
  assert.deepEqual(m.dims, [1, 1, 28, 28]);
  const t = resolveImageSpec({ size: [96, 160], channels: 'BGR', extra: [0] }, TEAMS_IN);
  assert.deepEqual(t.dims, [1, 4, 96, 160]);
  const nhwc = resolveImageSpec({}, [{ name: 'x', dtype: 'float32', shape: [1, 224, 224, 3] }]);
  assert.equal(nhwc.layout, 'NHWC');
  const refusals = [
    [{ sise: [1, 1] }, MNIST_IN, /unknown key 'sise'/],
    [{}, TEAMS_IN, /symbolic height or width: give "size"/],
    [{ size: [96, 160] }, TEAMS_IN, /has 4 channel\(s\): RGB gives 3 \(use "extra"/],
    [{ channels: 'RGB' }, MNIST_IN, /has 1 channel\(s\): RGB gives 3/],
    [{ size: [27, 28] }, MNIST_IN, /differs from input 'Input3''s 28x28/],
    [{ mean: [1, 2] }, MNIST_IN, /mean needs 1 value/],
    [{ std: 0 }, MNIST_IN, /std must not be 0/],
    [{ resize: 'zoom' }, MNIST_IN, /resize must be one of crop, stretch, pad/],
    [{}, [{ name: 'ids', dtype: 'int64', shape: [1, 8] }], /images feed a float32 input/],
  ];
  for (const [spec, inputs, message] of refusals) assert.throws(() => resolveImageSpec(spec, inputs), message);
});

test('imageToTensor: bilinear at pixel centres, channel order, layout, scale/mean/std, extra channels', () => {
  // 2x2 RGBA: red, green / blue, white.
  const img = { width: 2, height: 2, data: new Uint8Array([255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 255, 255]) };
  const inputs = (c, h, w) => [{ name: 'x', dtype: 'float32', shape: [1, c, h, w] }];
  // Same size: the pixels themselves, RGB planes, scale 1.
  const same = imageToTensor(img, resolveImageSpec({ scale: 1 }, inputs(3, 2, 2)));
  assert.deepEqual(Array.from(same.data), [255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255]);
  // BGR, NHWC, (x/255 - 0.5)/0.5.
  const bgr = imageToTensor(img, resolveImageSpec({ channels: 'BGR', layout: 'NHWC', mean: 0.5, std: 0.5 }, [{ name: 'x', dtype: 'float32', shape: [1, 2, 2, 3] }]));
  assert.deepEqual(Array.from(bgr.data), [-1, -1, 1, -1, 1, -1, 1, -1, -1, 1, 1, 1]);
  // 1x1 from 2x2: the centre sample averages all four; GRAY is 0.299R + 0.587G + 0.114B.
  const one = imageToTensor(img, resolveImageSpec({ scale: 1, channels: 'GRAY', extra: [7], layout: 'NCHW' }, inputs(2, 1, 1)));
  assert.equal(one.data[0], Math.fround((0.299 * 510 + 0.587 * 510 + 0.114 * 510) / 4));
  assert.equal(one.data[1], 7);
  // pad: a 2x2 image into 2x4 leaves a zero column each side.
  const pad = imageToTensor(img, resolveImageSpec({ scale: 1, resize: 'pad', channels: 'GRAY' }, inputs(1, 2, 4)));
  assert.deepEqual([pad.data[0], pad.data[3], pad.data[4], pad.data[7]], [0, 0, 0, 0]);
  assert.equal(pad.data[1], Math.fround(0.299 * 255));
  // crop: a 2x4 image into 1x1 samples the centre of its middle 2x2.
  const wide = { width: 4, height: 2, data: new Uint8Array(32).fill(9) };
  assert.equal(imageToTensor(wide, resolveImageSpec({ scale: 1, channels: 'GRAY' }, inputs(1, 1, 1))).data[0], Math.fround(9 * (0.299 + 0.587 + 0.114)));
});

test('npx wasmq quantize --calib DIR of PNG/JPEG files: held-out evaluation; a warning without a spec; the native command names npx', async () => {
  const digits = parseNpy(readFileSync(path.join(REPO, 'demo/digits.npy')));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-images-'));
  try {
    const images = path.join(dir, 'digits');
    mkdirSync(images);
    for (let k = 0; k < 8; k++) {
      const px = digits.data.subarray((k % 10) * 784, (k % 10 + 1) * 784);
      const rgba = new Uint8Array(784 * 4);
      for (let i = 0; i < 784; i++) rgba.set([px[i], px[i], px[i], 255], i * 4);
      if (k % 2) {
        writeFileSync(path.join(images, `d${k}.jpg`), jpeg.encode({ width: 28, height: 28, data: rgba }, 95).data);
      } else {
        const png = new PNG({ width: 28, height: 28 });
        png.data = Buffer.from(rgba);
        writeFileSync(path.join(images, `d${k}.png`), PNG.sync.write(png));
        // A PNG decodes to exactly its pixels.
        assert.deepEqual(decodeImageFile(readFileSync(path.join(images, `d${k}.png`)), 'x').data, Buffer.from(rgba));
      }
    }
    const mnist = path.join(MODELS, 'mnist-8/model.onnx');
    const cfg = path.join(dir, 'cfg.json');
    writeFileSync(cfg, JSON.stringify({ images: { scale: 1 } }));
    const run = (extra) => spawnSync(process.execPath, [CLI, 'quantize', mnist, '-o', path.join(dir, 'q.onnx'), '--report', path.join(dir, 'r.json'), '--calib', images, ...extra], { encoding: 'utf8' });
    const withSpec = run(['--config', cfg]);
    assert.equal(withSpec.status, 0, withSpec.stderr);
    const report = JSON.parse(readFileSync(path.join(dir, 'r.json'), 'utf8'));
    assert.equal(report.calibrationSamples, 6);
    assert.equal(report.heldOutSamples, 2);
    const out = report.evaluation.outputs[0];
    assert.equal(out.name, 'Plus214_Output_0');
    assert.equal(out.top1Rows, 2);
    assert.ok(out.cosine > 0.9 && out.cosine <= 1, `held-out cosine ${out.cosine}`);
    assert.doesNotMatch(withSpec.stderr, /default spec/);
    const guessed = run([]);
    assert.equal(guessed.status, 0, guessed.stderr);
    assert.match(guessed.stderr, /wasmq: warning: images preprocessed by the default spec \(GRAY, pixels \/ 255, crop\)/);
    if (existsSync(NATIVE_CLI)) {
      const native = spawnSync(NATIVE_CLI, ['quantize', mnist, '-o', path.join(dir, 'n.onnx'), '--calib', images], { encoding: 'utf8' });
      assert.equal(native.status, 2);
      assert.match(native.stderr, /holds images: the native command reads \.npy files and test_data_set_\* folders; `npx wasmq quantize` \(same flags\) decodes PNG\/JPEG/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
