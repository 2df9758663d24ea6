// Sizes of the release front end as a browser downloads it: the main WASM module, and for each
// page (a lazily loaded route) the chunks it needs on top, raw and gzip -9.
// Usage: node scripts/wasm-sizes.mjs [target/site/pkg]
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const dir = process.argv[2] ?? "target/site/pkg";
const size = (file) => {
  const bytes = readFileSync(join(dir, file));
  return { raw: bytes.length, gz: gzipSync(bytes, { level: 9 }).length };
};
const row = (name, { raw, gz }) =>
  console.log(`${name.padEnd(34)} ${String(raw).padStart(9)} bytes, gzip -9: ${String(gz).padStart(8)} bytes`);

const main = size("berth.wasm");
row("berth.wasm (main)", main);
for (const file of ["berth.js", "berth.css"]) row(file, size(file));
const manifestPath = join(dir, "__wasm_split_manifest.json");
if (existsSync(manifestPath)) {
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  for (const [split, chunks] of Object.entries(manifest)) {
    const page = split.match(/^__(.+)_route_view_\d+$/);
    if (!page) continue;
    const total = chunks
      .map((chunk) => size(`${chunk}.wasm`))
      .reduce((a, b) => ({ raw: a.raw + b.raw, gz: a.gz + b.gz }), { raw: 0, gz: 0 });
    row(`page ${page[1]}: main + its chunks`, { raw: main.raw + total.raw, gz: main.gz + total.gz });
  }
}
