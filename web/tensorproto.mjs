// Just enough of ONNX's TensorProto to read the demos' sample inputs
// (test_data_set_*/input_0.pb): dims (field 1), data_type (2), float_data
// (4, packed) and raw_data (9).
function varint(buf, pos) {
  let v = 0;
  let mul = 1;
  for (;;) {
    const b = buf[pos++];
    v += (b & 0x7f) * mul;
    if (!(b & 0x80)) return [v, pos];
    mul *= 128;
  }
}

export function parseFloatTensor(bytes) {
  const buf = new Uint8Array(bytes);
  const dims = [];
  let raw = null;
  let floats = null;
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = varint(buf, pos);
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) {
      let v;
      [v, pos] = varint(buf, pos);
      if (field === 1) dims.push(v);
    } else if (wire === 2) {
      let len;
      [len, pos] = varint(buf, pos);
      const body = buf.slice(pos, pos + len);
      pos += len;
      if (field === 9) raw = body;
      else if (field === 4) floats = body;
      else if (field === 1) for (let p = 0; p < body.length; ) [dims[dims.length], p] = varint(body, p);
    } else if (wire === 5) pos += 4;
    else if (wire === 1) pos += 8;
    else throw new Error(`TensorProto: wire type ${wire} not handled`);
  }
  const data = raw ?? floats;
  if (!data) throw new Error('TensorProto: no float data');
  return { dims, data: new Float32Array(data.buffer, data.byteOffset, data.byteLength / 4) };
}
