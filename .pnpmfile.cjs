// pnpm hooks of this workspace. beforePacking: the package.json a package is published with has
// no scripts. They are the workspace's own (build, test, lint, build:native, prepack ...), run
// from the repository and naming files that are not in the tarball (tsconfig files, vitest,
// ../../tooling/scripts/*); a user of the package never runs them.
'use strict';

module.exports = {
  hooks: {
    beforePacking(pkg) {
      delete pkg.scripts;
      return pkg;
    },
  },
};
