// npm always ships the package root's README.md, and the repository's
// README is for people with a clone (its first commands are repository
// scripts the package does not ship). Around `npm pack` / `npm publish`
// (prepack / postpack) this puts the npm users' README (docs/npm-readme.md)
// in its place and back.
//
//   node scripts/pack-readme.mjs swap      README.md -> .README.repo.md, docs/npm-readme.md -> README.md
//   node scripts/pack-readme.mjs restore   .README.repo.md -> README.md
import { copyFileSync, existsSync, renameSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const at = (p) => fileURLToPath(new URL(`../${p}`, import.meta.url));
const README = at('README.md');
const SAVED = at('.README.repo.md');

function restore() {
  if (existsSync(SAVED)) renameSync(SAVED, README);
}

const step = process.argv[2];
if (step === 'swap') {
  restore(); // a pack that stopped before its postpack left the swap in place
  renameSync(README, SAVED);
  copyFileSync(at('docs/npm-readme.md'), README);
} else if (step === 'restore') {
  restore();
} else {
  console.error('usage: node scripts/pack-readme.mjs swap|restore');
  process.exit(2);
}
