// Sizes of the release front end as a browser downloads it: the main WASM module, and for each
// page the chunks of that page's lazy islands on top (raw and gzip -9, each file on its own, as
// each is served separately). A page without islands loads the main module only.
// Usage: node scripts/wasm-sizes.mjs [target/site/pkg]
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

// Which islands each page renders (see `#[island]` in app/src/pages).
const PAGES = {
  "Sign-in": [],
  "Inventory": ["inventory_board"],
  "GPU": ["gpu_refresh"],
  "Calendar": ["calendar_board"],
  "My reservations": ["reservations_board"],
  "Profile": ["time_zone_setting", "api_tokens"],
  "Maintenance": ["maintenance_board"],
  "Nodes": ["nodes_board"],
};

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
const manifest = existsSync(manifestPath) ? JSON.parse(readFileSync(manifestPath, "utf8")) : {};
const chunksOf = (island) => {
  const key = Object.keys(manifest).find((k) => k.startsWith(`${island}_loader_`));
  if (!key) throw new Error(`no chunks for the island ${island}: was it built with --split?`);
  return manifest[key];
};
for (const [page, islands] of Object.entries(PAGES)) {
  const chunks = new Set(islands.flatMap(chunksOf));
  const total = [...chunks]
    .map((chunk) => size(`${chunk}.wasm`))
    .reduce((a, b) => ({ raw: a.raw + b.raw, gz: a.gz + b.gz }), main);
  row(`${page} page in all`, total);
}
