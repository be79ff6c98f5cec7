// Types for wasmq/npy (src/js/npy.mjs): numpy .npy reader and writer.
import type { DType, TensorData } from './index.js';

export class NpyError extends Error {}

export interface NpyArray {
  dtype: DType;
  dims: number[];
  /** A fresh, aligned copy of the elements. */
  data: TensorData;
}

/** Reads format 1.x/2.x/3.x, '<' or '|' byte order, C order; throws NpyError otherwise. */
export function parseNpy(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): NpyArray;
/** Writes format 1.0 (2.0 for huge headers), little-endian, C order, data 64-byte aligned. */
export function encodeNpy(array: NpyArray): Uint8Array;
