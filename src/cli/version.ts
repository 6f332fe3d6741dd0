import { arch, platform } from 'node:os';
import { BUILD } from './generated/build.js';

/**
 * The version `svc --version` names: the package's, with the git commit it was built from as semver
 * build metadata (`0.1.0+f7fc82f71b42`), the same for the npm-installed svc and the single executable.
 */
export const VERSION = `${BUILD.version}+${BUILD.commit}`;

/** What `svc --version` prints, in oclif's form: `svc/0.1.0+f7fc82f71b42 linux-x64 node-v24.21.0`. */
export const VERSION_LINE = `svc/${VERSION} ${platform()}-${arch()} node-${process.version}`;
