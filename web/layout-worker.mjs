// Layered layout off the main thread: big graphs (1,000+ nodes) take dagre
// a while, and the page must keep responding meanwhile.
import { layoutDrawable } from '../src/js/graph/render.mjs';

self.onmessage = ({ data }) => {
  const t0 = performance.now();
  try {
    const layout = layoutDrawable(data.drawable);
    self.postMessage({ id: data.id, layout, ms: performance.now() - t0 });
  } catch (e) {
    self.postMessage({ id: data.id, error: String(e?.message ?? e) });
  }
};
