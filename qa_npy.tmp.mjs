import { readFileSync, readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeImageFile } from './src/js/calib.mjs';
import { resolveImageSpec, imageToTensor } from './src/js/images.mjs';
import { encodeNpy } from './src/js/npy.mjs';
const [src, out, name, shape, spec] = process.argv.slice(2);
const inputs = [{ name, dtype: 'float32', shape: shape.split('x').map(Number) }];
const s = resolveImageSpec(JSON.parse(spec), inputs);
for (const f of readdirSync(src).sort()) {
  const t = imageToTensor(decodeImageFile(readFileSync(path.join(src, f)), f), s);
  mkdirSync(path.join(out, f), { recursive: true });
  writeFileSync(path.join(out, f, `${name}.npy`), encodeNpy({ dtype: 'float32', dims: t.dims, data: t.data }));
}
