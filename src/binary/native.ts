import { createRequire } from 'node:module';
import { join } from 'node:path';
import { getAsset, getRawAsset } from 'node:sea';
import { binaryCacheCandidates } from '../settings/binary-cache.js';
import { materialize, type Manifest } from './cache.js';

/**
 * How the single executable loads a package that carries native code (lmdb, @node-rs/argon2, and
 * whatever they load): from files extracted into the private cache (./cache.ts), with Node's own
 * file-based `require`, so each package finds its prebuilt `.node` file exactly as it does in
 * node_modules. The build (scripts/build-binary.mjs) routes every import of such a package here,
 * and defers it to the first use of one of its exports: `svc --version`, `--help`, and commands
 * that never open the store touch no file.
 */

/** Asset names, as scripts/build-binary.mjs writes them. */
export const NATIVE_MANIFEST_ASSET = 'native/manifest.json';
export const NATIVE_FILE_ASSET_PREFIX = 'native/files/';

let load: NodeJS.Require | undefined;

/** The package `id`, loaded from the verified cache folder (written on first use). */
export function nativeRequire(id: string): unknown {
  if (!load) {
    const manifest = JSON.parse(getAsset(NATIVE_MANIFEST_ASSET, 'utf8')) as Manifest;
    const dir = materialize(
      { manifest, read: (path) => new Uint8Array(getRawAsset(NATIVE_FILE_ASSET_PREFIX + path)) },
      binaryCacheCandidates(),
    );
    load = createRequire(join(dir, 'index.js'));
  }
  return load(id);
}
