// Preload (node --import) that makes load() default to 2 threads: the
// test script runs the whole Node suite a second time this way.
import { configure } from '../../src/js/index.mjs';

configure({ threads: 2 });
