import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { load } from './src/js/index.mjs';
import { parseNpy } from './src/js/npy.mjs';
const [floatFile, dir, name, ...qs] = process.argv.slice(2);
const f = await load(readFileSync(floatFile), { inputShapes: { [name]: [1, 4, 96, 160] } });
const samples = readdirSync(dir).sort().map((d) => parseNpy(readFileSync(path.join(dir, d, `${name}.npy`))));
for (const q of qs) {
  const m = await load(readFileSync(q));
  const acc = [[0, 0, 0], [0, 0, 0]];
  const per = [];
  for (let k = 0; k < samples.length; k++) {
    const feeds = { [name]: { data: samples[k].data, dims: samples[k].dims } };
    const a = Object.values(await f.run(feeds))[0].data, b = Object.values(await m.run(feeds))[0].data;
    let d = 0, x = 0, y = 0;
    for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; x += a[i] * a[i]; y += b[i] * b[i]; }
    const s = acc[k % 4 === 3 ? 1 : 0]; s[0] += d; s[1] += x; s[2] += y;
    per.push((d / Math.sqrt(x * y)).toFixed(3));
  }
  console.log(q, 'calib', (acc[0][0] / Math.sqrt(acc[0][1] * acc[0][2])).toFixed(5), 'heldout', (acc[1][0] / Math.sqrt(acc[1][1] * acc[1][2])).toFixed(5));
  console.log(per.join(' '));
}
