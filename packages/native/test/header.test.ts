import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { include } from '../src/index.js';

// The public headers compile on their own, in C and C++, strictly, with no feature macros
// (a backend includes them first or after its own headers). This machine builds the addon with
// the same compilers, so they are here.
const dir = mkdtempSync(join(tmpdir(), 'devexit-header-'));
const use = `
const devexit_registry_v1 *reg;
char err[256];
int devexit_test_find(void) { return devexit_find_registry(DEVEXIT_ABI_VERSION, &reg, err, sizeof err); }
`;
const sources = {
  first: `#include "devexit.h"\n#include "devexit_host.h"\n${use}`,
  afterLibc: `#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include "devexit_host.h"\n${use}`,
  unused: `#include "devexit.h"\nint devexit_test_nothing;\n`,
};

describe('include/devexit.h and devexit_host.h compile standalone', () => {
  for (const [compiler, std, ext] of [
    ['cc', 'c11', 'c'],
    ['cc', 'c17', 'c'],
    ['c++', 'c++17', 'cc'],
  ] as const) {
    for (const [name, text] of Object.entries(sources)) {
      it(`${compiler} -std=${std} -Wall -Wextra -Werror -pedantic: ${name}`, () => {
        const file = join(dir, `${name}-${std}.${ext}`);
        writeFileSync(file, text);
        const r = spawnSync(
          compiler,
          [
            `-std=${std}`,
            '-Wall',
            '-Wextra',
            '-Werror',
            '-pedantic',
            `-I${include}`,
            '-c',
            file,
            '-o',
            `${file}.o`,
          ],
          { encoding: 'utf8' },
        );
        expect(r.status, r.stderr).toBe(0);
      });
    }
  }
});
