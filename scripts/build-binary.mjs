#!/usr/bin/env node
// npm run build:binary: the single executable dist/bin/svc-<platform>-<arch>, a Node single
// executable application (node:sea) made from the compiled dist/ by these steps:
//
// 1. Find the packages that carry native code, generically: every production dependency (walked
//    from package.json through node_modules, as Node resolves) holding a `.node` file, and every
//    package that can reach one (lmdb, msgpackr, msgpackr-extract, @node-rs/argon2 today). These
//    "native packages" are not bundled: their files are embedded as assets and loaded, at first
//    use, from a verified private cache folder (src/binary/), where each finds its prebuilt
//    addon exactly as it does in node_modules.
// 2. Probe them in this very Node (the one the executable is made from, so the same ABI): which
//    `.node` files they load (only those are embedded, not the prebuilds for other systems), and
//    what they export (so that the bundle can defer loading them to the first use of an export).
// 3. Bundle dist/src/cli/binary.js with esbuild into one CommonJS file (Node 24's SEA runs
//    CommonJS only). oclif's module loader is swapped for a table of the bundled modules that
//    the executable's oclif section names (src/cli/generated/build.ts: the index of command
//    classes, since it reads no manifest, and the hooks), so oclif loads nothing from disk.
// 4. Write the SEA blob (node --experimental-sea-config) with the bundle as main script, V8's code
//    cache, and the assets: config/default.json, the native packages' files and their manifest
//    (path, size, SHA-256; its hash names the cache folder).
// 5. Copy this node binary and inject the blob with postject.
//
// Prints the binary's size and the wall time of `svc --version`. `--bundle-only` stops after step 3
// (dist/binary/svc.cjs and its esbuild metafile meta.json), to look at what the bundle holds.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const esbuild = require('esbuild');
const { inject } = require('postject');

const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** Files of a native package that are embedded; a `.node` file only if the probe saw it loaded. */
const RUNTIME_FILE = /\.(c?js|mjs|json|wasm)$/;
/** Files of the package embedded as they are, read back with node:sea's getAsset (src/lib/paths.ts). */
const PACKAGE_FILES = ['config/default.json'];
/** Asset names; src/binary/native.ts reads them. */
const NATIVE_MANIFEST_ASSET = 'native/manifest.json';
const NATIVE_FILE_ASSET_PREFIX = 'native/files/';

const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const work = join(root, 'dist', 'binary');
const output = join(root, 'dist', 'bin', `svc-${process.platform}-${process.arch}`);
const entry = join(root, 'dist', 'src', 'cli', 'binary.js');

function fail(message) {
  console.error(`build:binary: ${message}`);
  process.exit(1);
}

if (process.platform !== 'linux') fail(`builds for Linux only (this is ${process.platform})`);
if (!existsSync(entry)) fail(`${relative(root, entry)} is missing: run npm run build first`);
const nodeBinary = readFileSync(process.execPath);
if (!nodeBinary.includes(`${SEA_FUSE}:0`)) fail(`${process.execPath} has no single-executable fuse to flip`);

// 1. Packages, as Node resolves them from each package's folder.
/** @type {Map<string, { name: string, dir: string, deps: string[] }>} */
const packages = new Map();
function resolvePackage(fromDir, name) {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === root || dirname(dir) === dir) return undefined;
  }
}
function visit(dir) {
  if (packages.has(dir)) return;
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const names = Object.keys({
    ...manifest.dependencies,
    ...manifest.optionalDependencies,
    ...manifest.peerDependencies,
  });
  const node = { name: manifest.name, dir, deps: [] };
  packages.set(dir, node);
  for (const name of names) {
    const found = resolvePackage(dir, name);
    // An optional dependency for another platform is not installed; that is expected.
    if (found) {
      node.deps.push(found);
      visit(found);
    }
  }
}
visit(root);
packages.delete(root);
/** A package's own files (not those of packages nested in its node_modules), relative to it. */
function ownFiles(dir, prefix = '') {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : ownFiles(dir, path);
    return entry.isFile() ? [path] : [];
  });
}
// Native packages: those holding a `.node` file, and every package that depends on one of them,
// directly or not (walked backwards from the addons).
const dependents = new Map();
for (const [dir, { deps }] of packages)
  for (const dep of deps) dependents.set(dep, [...(dependents.get(dep) ?? []), dir]);
const nativeDirs = new Set([...packages.keys()].filter((dir) => ownFiles(dir).some((f) => f.endsWith('.node'))));
for (const queue = [...nativeDirs]; queue.length > 0;) {
  for (const dependent of dependents.get(queue.pop()) ?? []) {
    if (!nativeDirs.has(dependent)) {
      nativeDirs.add(dependent);
      queue.push(dependent);
    }
  }
}
const nativeByName = new Map();
for (const dir of nativeDirs) {
  const { name } = packages.get(dir);
  if (nativeByName.has(name)) fail(`two copies of the native package ${name}: ${nativeByName.get(name)} and ${dir}`);
  nativeByName.set(name, dir);
}

// 2. The probe, in a child of this same node: what each native package exports, which addons load.
const probe = spawnSync(
  process.execPath,
  [
    '-e',
    `
    const { createRequire } = require('node:module');
    const loaded = new Set();
    const dlopen = process.dlopen;
    process.dlopen = function (module, filename, ...rest) { loaded.add(filename); return dlopen.call(this, module, filename, ...rest); };
    const exportsOf = {};
    for (const [name, dir] of JSON.parse(process.argv[1])) {
      try {
        const m = createRequire(dir + '/package.json')(name);
        exportsOf[name] = { keys: Object.keys(m), esModule: m.__esModule === true };
      } catch (err) {
        exportsOf[name] = { error: String(err && err.message) };
      }
    }
    process.stdout.write(JSON.stringify({ exportsOf, loaded: [...loaded] }));
    `,
    JSON.stringify([...nativeByName].map(([name, dir]) => [name, dirname(dir)])),
  ],
  { cwd: root, encoding: 'utf8' },
);
if (probe.status !== 0) fail(`the probe of the native packages failed:\n${probe.stderr}`);
const { exportsOf, loaded } = JSON.parse(probe.stdout);
const loadedAddons = new Set(loaded.map((file) => relative(root, file).split(sep).join('/')));

// 3. The bundle.
const nativeModule = join(root, 'dist', 'src', 'binary', 'native.js');
// The executable's oclif section (src/cli/generated/build.ts): its commands come from the index of
// classes, since it reads no manifest file.
const { PACKAGE } = await import(pathToFileURL(join(root, 'dist', 'src', 'cli', 'generated', 'build.js')).href);
const oclifModuleTable = () => {
  const oclif = PACKAGE.oclif ?? {};
  const targets = [
    typeof oclif.commands === 'string' ? undefined : oclif.commands?.target,
    ...Object.values(oclif.hooks ?? {}).flatMap((hooks) =>
      [hooks].flat().map((h) => (typeof h === 'string' ? h : h.target)),
    ),
    oclif.helpClass,
  ].filter(Boolean);
  const rows = targets.map((target) => {
    const key = relative(root, join(root, target)).split(sep).join('/');
    if (!existsSync(join(root, key))) fail(`package.json's oclif section names ${target}, which is not built`);
    return `  ${JSON.stringify(key)}: () => require(${JSON.stringify(join(root, key))}),`;
  });
  // oclif's module loader, for a bundle: the modules package.json's oclif section names, by path.
  return `
const { join, relative, sep } = require('node:path');
const table = {
${rows.join('\n')}
};
function find(root, modulePath) {
  const key = relative(root, modulePath).split(sep).join('/');
  for (const name of [key, key + '.js']) if (table[name]) return { filePath: join(root, name), module: table[name]() };
  const error = new Error('svc: this build holds no module ' + key);
  error.code = 'MODULE_NOT_FOUND';
  throw error;
}
exports.load = async (config, modulePath) => find(config.root, modulePath).module;
exports.loadWithData = async (config, modulePath) => ({ ...find(config.root, modulePath), isESM: true });
exports.loadWithDataFromManifest = async () => {
  throw new Error('svc: this build reads no oclif manifest');
};
exports.isPathModule = () => true;
`;
};
const productionNames = new Set([...packages.values()].map((p) => p.name));
const leftOut = new Set();
const packageName = (specifier) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
const importedNative = new Set();
const seaPlugin = {
  name: 'svc-sea',
  setup(build) {
    build.onResolve({ filter: /[\\/]module-loader(\.js)?$/ }, (args) =>
      args.importer.includes(`${sep}@oclif${sep}core${sep}`)
        ? { path: 'oclif-module-loader', namespace: 'svc-oclif' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'svc-oclif' }, () => ({
      contents: oclifModuleTable(),
      loader: 'js',
      resolveDir: root,
    }));
    build.onResolve({ filter: /^(@[^/.][^/]*\/)?[^/.][^/]*/ }, (args) => {
      // `#name`: a package's own subpath import (package.json "imports", as OpenTelemetry's
      // `#platform`), resolved by esbuild inside the importing package.
      if (args.path.startsWith('#')) return undefined;
      const name = packageName(args.path);
      if (args.path.startsWith('node:') || builtinModules.includes(name)) return undefined;
      // Only production dependencies go in: a development tool that a library loads only when it
      // is present (oclif's TypeScript support) stays out, and is simply absent at run time.
      if (!productionNames.has(name)) {
        leftOut.add(name);
        return { path: args.path, external: true };
      }
      if (!nativeByName.has(name) || args.namespace === 'svc-native') return undefined;
      if (args.path !== name)
        return { errors: [{ text: `${args.path}: only the main entry of a native package can be loaded` }] };
      importedNative.add(name);
      return { path: name, namespace: 'svc-native' };
    });
    build.onLoad({ filter: /.*/, namespace: 'svc-native' }, (args) => {
      const probed = exportsOf[args.path];
      if (!probed || probed.error)
        return { errors: [{ text: `${args.path} did not load in the probe: ${probed?.error}` }] };
      // Exports resolve on first use: loading the package (and writing the cache) waits until then.
      const keys = probed.keys.filter((k) => k !== '__esModule');
      return {
        resolveDir: root,
        loader: 'js',
        contents: `
const { nativeRequire } = require(${JSON.stringify(nativeModule)});
let loaded;
const load = () => (loaded ??= nativeRequire(${JSON.stringify(args.path)}));
${probed.esModule ? "Object.defineProperty(exports, '__esModule', { value: true });" : ''}
for (const key of ${JSON.stringify(keys)}) Object.defineProperty(exports, key, { enumerable: true, get: () => load()[key] });
`,
      };
    });
  },
};

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
mkdirSync(dirname(output), { recursive: true });
const bundleFile = join(work, 'svc.cjs');
const result = await esbuild.build({
  entryPoints: [entry],
  outfile: bundleFile,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: `node${process.versions.node}`,
  plugins: [seaPlugin],
  metafile: true,
  legalComments: 'eof',
  logLevel: 'warning',
  logOverride: { 'empty-import-meta': 'silent' },
});
if (result.errors.length > 0) process.exit(1);
writeFileSync(join(work, 'meta.json'), JSON.stringify(result.metafile));

if (process.argv.includes('--bundle-only')) process.exit(0);

// 4. Assets and the SEA blob.
const shipped = new Set();
function ship(dir) {
  if (shipped.has(dir)) return;
  shipped.add(dir);
  for (const dep of packages.get(dir).deps) ship(dep);
}
for (const name of importedNative) ship(nativeByName.get(name));
const files = [];
for (const dir of [...shipped].sort()) {
  const rel = relative(root, dir).split(sep).join('/');
  const own = ownFiles(dir);
  const addons = own.filter((f) => f.endsWith('.node'));
  const kept = addons.filter((f) => loadedAddons.has(`${rel}/${f}`));
  if (addons.length > 0 && kept.length === 0) {
    fail(
      `${rel} holds native addons (${addons.join(', ')}) that the probe did not load: load them in the probe, or drop the package`,
    );
  }
  for (const f of [...own.filter((f) => RUNTIME_FILE.test(f)), ...kept]) {
    const path = `${rel}/${f}`;
    const bytes = readFileSync(join(root, path));
    files.push({ path, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
  }
}
files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
const hash = createHash('sha256')
  .update(files.map((f) => `${f.sha256}  ${f.path}\n`).join(''))
  .digest('hex');
const version = `${pjson.version}`;
writeFileSync(join(work, 'native-manifest.json'), JSON.stringify({ version, hash, files }));
const assets = {
  [NATIVE_MANIFEST_ASSET]: join(work, 'native-manifest.json'),
  ...Object.fromEntries(files.map((f) => [NATIVE_FILE_ASSET_PREFIX + f.path, join(root, f.path)])),
  ...Object.fromEntries(PACKAGE_FILES.map((f) => [f, join(root, f)])),
};
const blob = join(work, 'sea.blob');
const seaConfig = join(work, 'sea-config.json');
writeFileSync(
  seaConfig,
  JSON.stringify(
    {
      main: bundleFile,
      output: blob,
      disableExperimentalSEAWarning: true,
      useCodeCache: true,
      // NODE_OPTIONS cannot reach into the binary (no --require of someone's script).
      execArgvExtension: 'none',
      assets,
    },
    null,
    2,
  ),
);
execFileSync(process.execPath, ['--experimental-sea-config', seaConfig], { cwd: work, stdio: 'inherit' });

// 5. The executable.
rmSync(output, { force: true });
copyFileSync(process.execPath, output);
chmodSync(output, 0o755);
// LIEF (inside postject) warns once per ELF note section it cannot name; the injection is sound
// (the smoke test runs the result), so those lines are dropped and any other warning is shown.
const warn = console.warn;
console.warn = (...args) => {
  if (!/^warning: Can't find string offset for section name/.test(String(args[0]))) warn(...args);
};
try {
  await inject(output, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: SEA_FUSE });
} finally {
  console.warn = warn;
}

const size = statSync(output).size;
const runs = 5;
let best = Infinity;
let printed = '';
for (let i = 0; i < runs; i++) {
  const start = process.hrtime.bigint();
  const run = spawnSync(output, ['--version'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (run.status !== 0) fail(`${relative(root, output)} --version failed:\n${run.stderr}`);
  printed = run.stdout.trim();
  best = Math.min(best, ms);
}
const nativeBytes = files.reduce((n, f) => n + f.size, 0);
console.log(`build:binary: ${relative(root, output)}`);
console.log(
  `  size           ${(size / 1e6).toFixed(1)} MB (bundle ${(statSync(bundleFile).size / 1e6).toFixed(1)} MB, native packages ${files.length} files ${(nativeBytes / 1e6).toFixed(1)} MB: ${[...importedNative].sort().join(', ')})`,
);
console.log(`  left out       ${[...leftOut].sort().join(', ') || 'nothing'} (not production dependencies)`);
console.log(`  --version      ${printed}`);
console.log(`  --version took ${best.toFixed(0)} ms (best of ${runs})`);
