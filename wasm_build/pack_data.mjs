// Packs the read-only data of a linked wasmq .wasm (most of it message and
// format text) with a small LZ code that src/core/api/wasm_data_pack.c
// expands in place when the module starts: the text in memory is byte for
// byte what was linked. The text is most of the data section and packs to a
// fraction of it; a server's gzip or brotli gains about as much on the
// unpacked file, so what shrinks is the raw file (and an uncompressed load).
//
// Usage: node wasm_build/pack_data.mjs FILE.wasm   (rewrites FILE.wasm)
//
// Only the data section changes (and, in a threaded build whose segments are
// passive, the two constants of the first segment's memory.init in the start
// function): no code is optimized or reordered, so relaxed-SIMD modules are
// safe. The data from the first segment up to the `wq_data_pack` descriptor
// (in a threaded build, whose segments are passive: the first segment, up to
// the descriptor if that lies inside it) is replaced by the packed stream,
// placed at the end of the range it unpacks to so that writing never
// overtakes reading.
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const MAGIC = [0x6b615071, 0x31656c69];
const SHORT_MAX = 8; // 0x80-0xdf: 3..8 bytes, distance <= 4096, 2 bytes
const LONG_MAX = 33; // 0xe0-0xfe: 3..33 bytes, distance <= 65536, 3 bytes

function fail(msg) {
  throw new Error(msg);
}

function readU(b, i) {
  let r = 0;
  let s = 0;
  for (;;) {
    const x = b[i++];
    r += (x & 0x7f) * 2 ** s;
    s += 7;
    if (x < 0x80) return [r, i];
  }
}
function readS32(b, i) {
  let r = 0;
  let s = 0;
  let x;
  do {
    x = b[i++];
    r |= (x & 0x7f) << s;
    s += 7;
  } while (x & 0x80);
  if (s < 32 && x & 0x40) r |= -1 << s;
  return [r, i];
}
function encU(v) {
  const out = [];
  do {
    let x = v % 128;
    v = Math.floor(v / 128);
    if (v) x |= 0x80;
    out.push(x);
  } while (v);
  return out;
}
function encS32(v) {
  const out = [];
  for (;;) {
    const x = v & 0x7f;
    v >>= 7;
    if ((v === 0 && !(x & 0x40)) || (v === -1 && x & 0x40)) {
      out.push(x);
      return out;
    }
    out.push(x | 0x80);
  }
}

// Optimal parse: for every position the cheapest way to code the rest.
export function pack(data) {
  const n = data.length;
  // Nearest earlier position per 3-byte key, chained.
  const head = new Map();
  const prev = new Int32Array(n).fill(-1);
  const best = []; // best[i]: [len, dist] pairs, the shortest distance reaching each length
  for (let i = 0; i < n; i++) {
    const cands = [];
    if (i + 3 <= n) {
      const key = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16);
      let reach = 2;
      for (let j = head.get(key) ?? -1; j >= 0 && i - j <= 65536; j = prev[j]) {
        let l = 0;
        while (l < LONG_MAX && i + l < n && data[j + l] === data[i + l]) l++;
        if (l > reach) {
          cands.push([l, i - j]);
          reach = l;
          if (l === LONG_MAX) break;
        }
      }
      prev[i] = head.get(key) ?? -1;
      head.set(key, i);
    }
    best.push(cands);
  }
  const cost = new Float64Array(n + 1);
  const choice = new Array(n); // [len, dist] or null for a literal
  for (let i = n - 1; i >= 0; i--) {
    let c = (data[i] < 0x80 ? 1 : 2) + cost[i + 1];
    let pick = null;
    let lo = 3;
    for (const [l, d] of best[i]) {
      // Lengths lo..l reach back d at the least.
      for (let len = lo; len <= l; len++) {
        const tok = len <= SHORT_MAX && d <= 4096 ? 2 : 3;
        if (tok + cost[i + len] < c) {
          c = tok + cost[i + len];
          pick = [len, d];
        }
      }
      lo = l + 1;
    }
    cost[i] = c;
    choice[i] = pick;
  }
  // Emit, noting after each token how far output runs ahead of input.
  const out = [];
  let cut = { packed: 0, plain: 0, gain: 0 };
  for (let i = 0; i < n; ) {
    const m = choice[i];
    if (!m) {
      if (data[i] >= 0x80) out.push(0xff);
      out.push(data[i]);
      i++;
    } else {
      const [len, dist] = m;
      if (len <= SHORT_MAX && dist <= 4096) {
        out.push(0x80 + ((len - 3) << 4) + ((dist - 1) >> 8), (dist - 1) & 0xff);
      } else {
        out.push(0xe0 + len - 3, (dist - 1) >> 8, (dist - 1) & 0xff);
      }
      i += len;
    }
    if (i - out.length >= cut.gain) cut = { packed: out.length, plain: i, gain: i - out.length };
  }
  // Unpacked in place, the stream ends where its output ends: writing stays
  // below the unread stream as long as output has not run further ahead of
  // input than it does at the end. So the stream stops where that lead is
  // largest, and the bytes after that stay as they are.
  return { stream: Uint8Array.from(out.slice(0, cut.packed)), n: cut.plain };
}

// Unpacks as the C constructor does, in place, in a copy of the region.
export function unpackInPlace(region, lead, streamLength) {
  const mem = Uint8Array.from(region);
  let s = lead;
  let d = 0;
  while (s < lead + streamLength) {
    const c = mem[s++];
    if (c < 0x80) mem[d++] = c;
    else if (c === 0xff) mem[d++] = mem[s++];
    else {
      let len;
      let dist;
      if (c < 0xe0) {
        len = ((c - 0x80) >> 4) + 3;
        dist = (((c & 15) << 8) | mem[s++]) + 1;
      } else {
        len = c - 0xe0 + 3;
        dist = ((mem[s] << 8) | mem[s + 1]) + 1;
        s += 2;
      }
      for (let f = d - dist; len > 0; len--) mem[d++] = mem[f++];
    }
  }
  return mem;
}

function sections(b) {
  const out = [];
  for (let i = 8; i < b.length; ) {
    const id = b[i];
    const [size, start] = readU(b, i + 1);
    out.push({ id, from: i, start, end: start + size });
    i = start + size;
  }
  return out;
}

function section(id, body) {
  return Uint8Array.from([id, ...encU(body.length), ...body]);
}

// The module's sections, data segments (with their addresses) and the
// wq_data_pack descriptor: { secs, segs, init, desc }.
export function readModule(b) {
  if (b.readUInt32LE(0) !== 0x6d736100) fail('not a wasm module');
  const secs = sections(b);
  const dataSec = secs.find((s) => s.id === 11);
  if (!dataSec) fail('no data section');

  // Segments: flags 0 (active, i32.const offset) or 1 (passive).
  let [count, i] = readU(b, dataSec.start);
  const segs = [];
  for (let k = 0; k < count; k++) {
    let flags;
    [flags, i] = readU(b, i);
    let offset = null;
    if (flags === 0) {
      if (b[i] !== 0x41) fail(`segment ${k}: offset is not an i32.const`);
      [offset, i] = readS32(b, i + 1);
      if (b[i++] !== 0x0b) fail(`segment ${k}: offset expression is not one constant`);
    } else if (flags !== 1) fail(`segment ${k}: flags ${flags} not handled`);
    let len;
    [len, i] = readU(b, i);
    segs.push({ flags, offset, bytes: b.subarray(i, i + len) });
    i += len;
  }
  if (!segs.length) fail('no data segments');

  // Passive segments get their addresses from memory.init in the start function.
  const passive = segs[0].flags === 1;
  let init = null; // where the first segment's memory.init constants are
  if (passive) {
    const startSec = secs.find((s) => s.id === 8);
    if (!startSec) fail('passive segments but no start function');
    const [startFn] = readU(b, startSec.start);
    let imported = 0;
    const imp = secs.find((s) => s.id === 2);
    if (imp) {
      let [n, j] = readU(b, imp.start);
      for (let k = 0; k < n; k++) {
        let l;
        [l, j] = readU(b, j);
        j += l;
        [l, j] = readU(b, j);
        j += l;
        const kind = b[j++];
        if (kind === 0) {
          [, j] = readU(b, j);
          imported++;
        } else if (kind === 1) {
          j++;
          let fl;
          [fl, j] = readU(b, j);
          [, j] = readU(b, j);
          if (fl & 1) [, j] = readU(b, j);
        } else if (kind === 2) {
          let fl;
          [fl, j] = readU(b, j);
          [, j] = readU(b, j);
          if (fl & 1) [, j] = readU(b, j);
        } else if (kind === 3) j += 2;
        else fail(`import kind ${kind} not handled`);
      }
    }
    const code = secs.find((s) => s.id === 10);
    let [nfun, j] = readU(b, code.start);
    const want = startFn - imported;
    if (want < 0 || want >= nfun) fail('start function is imported');
    for (let k = 0; k < want; k++) {
      const [sz, p] = readU(b, j);
      j = p + sz;
    }
    const [bodySize, bodyStart] = readU(b, j);
    const body = b.subarray(bodyStart, bodyStart + bodySize);
    // i32.const dest, i32.const 0, i32.const size, memory.init k 0
    segs.forEach((seg, k) => {
      const tail = [0x41, 0x00, 0x41, ...encS32(seg.bytes.length), 0xfc, 0x08, ...encU(k), 0x00];
      const hits = [];
      for (let p = 0; p < body.length; p++) {
        if (body[p] !== 0x41) continue;
        const [dest, q] = readS32(body, p + 1);
        if (tail.every((x, t) => body[q + t] === x)) hits.push({ p, dest, q });
      }
      if (hits.length !== 1) fail(`found ${hits.length} memory.init of segment ${k} in the start function`);
      seg.offset = hits[0].dest;
      if (k === 0) init = { bodyHead: j, bodyStart, bodySize, ...hits[0] };
    });
  }
  for (const s of segs) if (s.offset === null) fail('a segment with no known address');

  // The descriptor: found by its magic words, in exactly one place.
  let desc = null;
  segs.forEach((s, k) => {
    for (let p = 0; p + 24 <= s.bytes.length; p++) {
      if (s.bytes.readUInt32LE(p) === MAGIC[0] && s.bytes.readUInt32LE(p + 4) === MAGIC[1]) {
        if (desc) fail('the wq_data_pack magic appears twice');
        desc = { seg: k, pos: p };
      }
    }
  });
  if (!desc) fail('no wq_data_pack descriptor (src/core/api/wasm_data_pack.c not linked?)');
  desc.addr = segs[desc.seg].offset + desc.pos;
  desc.fields = [2, 3, 4, 5].map((f) => segs[desc.seg].bytes.readUInt32LE(desc.pos + 4 * f));
  return { secs, segs, init, desc };
}

// The packed module and what was packed.
export function packModule(b) {
  const { secs, segs, init, desc } = readModule(b);
  if (desc.fields[3] !== 0xffffffff) fail('already packed');

  // The packed range: from the first segment up to the descriptor or the
  // first segment's end. Active segments before the descriptor join it (the
  // zeros between them included); passive ones are named by index in the
  // start function's code, so only the first is packed there.
  const seg = segs[0];
  const base = seg.offset;
  let last = 0;
  let end = desc.seg === 0 ? desc.addr : base + seg.bytes.length;
  if (seg.flags === 0) {
    for (let k = 1; k < segs.length; k++) {
      if (segs[k].flags !== 0 || segs[k].offset < segs[k - 1].offset + segs[k - 1].bytes.length) fail('active segments out of order');
    }
    last = desc.seg;
    end = desc.addr;
    if (last > 0 && secs.some((s) => s.id === 12)) fail('a data count section with active segments');
  }
  const plain = new Uint8Array(end - base);
  for (let k = 0; k <= last; k++) plain.set(segs[k].bytes.subarray(0, Math.max(0, end - segs[k].offset)), segs[k].offset - base);
  const { stream, n } = pack(plain);
  const lead = n - stream.length; // the stream starts here
  if (lead <= 0) return { bytes: b, n, packed: n };
  const rest = segs[last].bytes.subarray(Math.max(0, end - segs[last].offset)); // from the descriptor on
  const newSeg = Buffer.concat([Buffer.from(stream), plain.subarray(n), rest]);
  const region = new Uint8Array(plain.length);
  region.set(newSeg.subarray(0, plain.length - lead), lead);
  if (Buffer.compare(Buffer.from(unpackInPlace(region, lead, stream.length)), Buffer.from(plain)) !== 0) fail('self-check: unpacking in place does not give the data back');
  const inNew = desc.seg <= last;
  const descBytes = inNew ? newSeg : Buffer.from(segs[desc.seg].bytes);
  const dp = inNew ? desc.addr - (base + lead) : desc.pos;
  descBytes.writeUInt32LE(base, dp + 8);
  descBytes.writeUInt32LE(base + lead, dp + 12);
  descBytes.writeUInt32LE(stream.length, dp + 16);
  descBytes.writeUInt32LE(n, dp + 20);

  // Rebuild the data section: the new first segment, then those after the range.
  const kept = [{ ...seg, offset: base + lead, bytes: newSeg }, ...segs.slice(last + 1).map((s, i) => (last + 1 + i === desc.seg ? { ...s, bytes: descBytes } : s))];
  const parts = [...encU(kept.length)];
  for (const s of kept) {
    if (s.flags === 0) parts.push(0x00, 0x41, ...encS32(s.offset), 0x0b);
    else parts.push(0x01);
    parts.push(...encU(s.bytes.length));
    for (const x of s.bytes) parts.push(x);
  }
  const chunks = [];
  let at = 0;
  for (const s of secs) {
    if (s.id === 11) {
      chunks.push(b.subarray(at, s.from), section(11, parts));
      at = s.end;
    } else if (s.id === 10 && init) {
      // Same code but the first segment's memory.init destination and size.
      const body = b.subarray(init.bodyStart, init.bodyStart + init.bodySize);
      const patched = Buffer.concat([
        body.subarray(0, init.p),
        Buffer.from([0x41, ...encS32(base + lead), 0x41, 0x00, 0x41, ...encS32(newSeg.length)]),
        body.subarray(init.q + 3 + encS32(seg.bytes.length).length),
      ]);
      const code = Buffer.concat([
        b.subarray(s.start, init.bodyHead),
        Buffer.from(encU(patched.length)),
        patched,
        b.subarray(init.bodyStart + init.bodySize, s.end),
      ]);
      chunks.push(b.subarray(at, s.from), section(10, code));
      at = s.end;
    }
  }
  chunks.push(b.subarray(at));
  const result = Buffer.concat(chunks);
  // (An engine without relaxed SIMD cannot validate a relaxed module at all.)
  if (WebAssembly.validate(b) && !WebAssembly.validate(result)) fail('the packed module does not validate');
  return { bytes: result, n, packed: stream.length };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  try {
    if (process.argv.length !== 3) fail('usage: node wasm_build/pack_data.mjs FILE.wasm');
    const b = readFileSync(file);
    const { bytes, n, packed } = packModule(b);
    writeFileSync(file, bytes);
    console.log(`pack_data: ${file}: ${n} bytes of data packed to ${packed}; ${b.length} -> ${bytes.length} bytes`);
  } catch (e) {
    console.error(`pack_data: ${file}: ${e.message}`);
    process.exit(1);
  }
}
