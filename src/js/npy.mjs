// Reader and writer for numpy's .npy format (NEP 1 "format 1.0/2.0/3.0").
//
// File layout: "\x93NUMPY", major, minor, header length (uint16 LE for 1.x,
// uint32 LE for 2.x/3.x), then an ASCII (3.x: UTF-8) Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), } padded with
// spaces and ending in '\n', then the raw elements.
//
// We read v1/v2/v3, little-endian ('<') or byte-order-free ('|') element
// types from the runtime's dtype set, C order only. We write v1.0 (v2.0 when
// the header would not fit), little-endian, C order, header padded so the
// data starts at a multiple of 64 bytes.

import { DTYPES, dtypeFromNpy, arrayMatchesDtype, arrayKind, numel } from './dtypes.mjs';

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"
const ALIGN = 64;

export class NpyError extends Error {
  constructor(message) {
    super(message);
    this.name = 'NpyError';
  }
}

// --- header literal parser -------------------------------------------------
// Accepts the subset of Python literals numpy writes: a dict with string keys
// whose values are strings, True/False, integers and tuples/lists of integers.

function parseHeaderLiteral(text) {
  let pos = 0;
  const fail = (what) => {
    throw new NpyError(`npy: bad header at offset ${pos} (${what}): ${JSON.stringify(text.trim())}`);
  };
  const skipSpace = () => {
    while (pos < text.length && /\s/.test(text[pos])) pos++;
  };
  const expect = (ch) => {
    skipSpace();
    if (text[pos] !== ch) fail(`expected '${ch}'`);
    pos++;
  };
  const parseString = () => {
    skipSpace();
    const quote = text[pos];
    if (quote !== "'" && quote !== '"') fail('expected a string');
    const end = text.indexOf(quote, pos + 1);
    if (end < 0) fail('unterminated string');
    const s = text.slice(pos + 1, end);
    if (s.includes('\\')) fail('escapes are not supported');
    pos = end + 1;
    return s;
  };
  const parseValue = () => {
    skipSpace();
    const ch = text[pos];
    if (ch === "'" || ch === '"') return parseString();
    if (ch === '(' || ch === '[') {
      const close = ch === '(' ? ')' : ']';
      pos++;
      const items = [];
      for (;;) {
        skipSpace();
        if (text[pos] === close) {
          pos++;
          return items;
        }
        items.push(parseValue());
        skipSpace();
        if (text[pos] === ',') pos++;
        else if (text[pos] !== close) fail(`expected ',' or '${close}'`);
      }
    }
    const m = /^(True|False|-?\d+L?)/.exec(text.slice(pos));
    if (!m) fail('unexpected token');
    pos += m[0].length;
    if (m[0] === 'True') return true;
    if (m[0] === 'False') return false;
    return Number(m[0].replace('L', ''));
  };

  expect('{');
  const dict = {};
  for (;;) {
    skipSpace();
    if (text[pos] === '}') {
      pos++;
      break;
    }
    const key = parseString();
    expect(':');
    dict[key] = parseValue();
    skipSpace();
    if (text[pos] === ',') pos++;
    else if (text[pos] !== '}') fail("expected ',' or '}'");
  }
  skipSpace();
  if (pos !== text.length) fail('trailing characters');
  return dict;
}

// --- reading -----------------------------------------------------------------

/**
 * Parses .npy bytes into { dtype, dims, data } where data is a fresh
 * TypedArray (never a view of `bytes`). Throws NpyError naming the problem.
 */
export function parseNpy(input) {
  const bytes = toBytes(input);
  if (bytes.length < 10 || !MAGIC.every((b, i) => bytes[i] === b)) {
    throw new NpyError('npy: not a .npy file (missing \\x93NUMPY magic)');
  }
  const major = bytes[6];
  const minor = bytes[7];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let headerLen;
  let headerStart;
  if (major === 1) {
    headerLen = view.getUint16(8, true);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    if (bytes.length < 12) throw new NpyError('npy: truncated header');
    headerLen = view.getUint32(8, true);
    headerStart = 12;
  } else {
    throw new NpyError(`npy: unsupported format version ${major}.${minor} (expected 1.x, 2.x or 3.x)`);
  }
  const dataStart = headerStart + headerLen;
  if (dataStart > bytes.length) {
    throw new NpyError(`npy: header claims ${headerLen} bytes but the file has ${bytes.length - headerStart}`);
  }
  const headerBytes = bytes.subarray(headerStart, dataStart);
  let text;
  if (major === 3) {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(headerBytes);
    } catch {
      throw new NpyError('npy: format 3.0 header is not valid UTF-8');
    }
  } else {
    if (headerBytes.some((b) => b >= 0x80)) throw new NpyError(`npy: format ${major}.x header is not ASCII`);
    text = new TextDecoder('ascii').decode(headerBytes);
  }
  const header = parseHeaderLiteral(text);

  const descr = header.descr;
  if (typeof descr !== 'string') {
    throw new NpyError("npy: header has no 'descr' string (structured dtypes are not supported)");
  }
  if (header.fortran_order !== false) {
    throw new NpyError(
      header.fortran_order === true
        ? 'npy: fortran_order=True is not supported; save a C-ordered array (np.ascontiguousarray)'
        : "npy: header has no boolean 'fortran_order'",
    );
  }
  const shape = header.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new NpyError(`npy: bad shape ${JSON.stringify(shape)}`);
  }
  const order = descr[0];
  const body = descr.slice(1);
  const dtype = dtypeFromNpy(body);
  if (order === '>') {
    throw new NpyError(`npy: big-endian dtype '${descr}' is not supported; save little-endian (arr.astype('<${body}'))`);
  }
  if (!dtype || (order !== '<' && order !== '|') || (order === '|' && dtype.size !== 1)) {
    const supported = Object.values(DTYPES).map((d) => (d.size === 1 ? '|' : '<') + d.npy).join(', ');
    throw new NpyError(`npy: unsupported dtype '${descr}' (supported: ${supported})`);
  }
  const count = numel(shape);
  const nbytes = count * dtype.size;
  if (bytes.length - dataStart !== nbytes) {
    throw new NpyError(
      `npy: shape (${shape.join(', ')}) of ${descr} needs ${nbytes} data bytes, file has ${bytes.length - dataStart}`,
    );
  }
  // Copy so the result is aligned and independent of the input buffer.
  const copy = bytes.slice(dataStart, dataStart + nbytes);
  const data = new dtype.array(copy.buffer, 0, count);
  return { dtype: dtype.name, dims: shape.slice(), data };
}

// --- writing -----------------------------------------------------------------

function shapeLiteral(dims) {
  if (dims.length === 0) return '()';
  if (dims.length === 1) return `(${dims[0]},)`;
  return `(${dims.join(', ')})`;
}

/**
 * Encodes { dtype, dims, data } as .npy bytes (format 1.0, or 2.0 when the
 * header exceeds 65535 bytes). dtype is one of the runtime's dtype names.
 */
export function encodeNpy({ dtype, dims, data }) {
  const d = DTYPES[dtype];
  if (!d) throw new NpyError(`npy: unsupported dtype '${dtype}'`);
  if (!Array.isArray(dims) || !dims.every((x) => Number.isSafeInteger(x) && x >= 0)) {
    throw new NpyError(`npy: bad dims ${JSON.stringify(dims)}`);
  }
  if (!arrayMatchesDtype(data, d)) {
    throw new NpyError(`npy: ${dtype} data must be a ${d.array.name}, got ${arrayKind(data)}`);
  }
  const count = numel(dims);
  if (data.length !== count) {
    throw new NpyError(`npy: dims [${dims.join(',')}] need ${count} elements, data has ${data.length}`);
  }
  const descr = (d.size === 1 ? '|' : '<') + d.npy;
  const dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeLiteral(dims)}, }`;
  let major = 1;
  let prefix = 10;
  if (dict.length + 1 + ALIGN > 0xffff) {
    major = 2;
    prefix = 12;
  }
  const padded = Math.ceil((prefix + dict.length + 1) / ALIGN) * ALIGN;
  const header = dict + ' '.repeat(padded - prefix - dict.length - 1) + '\n';
  const out = new Uint8Array(padded + count * d.size);
  out.set(MAGIC, 0);
  out[6] = major;
  out[7] = 0;
  const view = new DataView(out.buffer);
  if (major === 1) view.setUint16(8, header.length, true);
  else view.setUint32(8, header.length, true);
  for (let i = 0; i < header.length; i++) out[prefix + i] = header.charCodeAt(i);
  // Typed arrays use the platform byte order, which is little-endian on every
  // engine we target (wasm itself is little-endian).
  out.set(new Uint8Array(data.buffer, data.byteOffset, count * d.size), padded);
  return out;
}

// Always a plain Uint8Array view: Node's Buffer.slice() would not copy.
function toBytes(input) {
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  throw new NpyError(`npy: expected bytes (Uint8Array or ArrayBuffer), got ${arrayKind(input)}`);
}
