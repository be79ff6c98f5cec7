// Browser (and Worker) side of #platform: everything is fetched, the page
// has real Workers, and there is no file system.
export const IS_NODE = false;

export async function readLocalFile(pathOrUrl) {
  throw new Error(`cannot read local file ${pathOrUrl} in a browser: pass bytes, a Blob/File or an http(s) URL`);
}

export const cpuCount = () => globalThis.navigator?.hardwareConcurrency ?? 1;

export function workerClass() {
  return null;
}
