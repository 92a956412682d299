import { backend, compile, startCompiler } from '@devexit/hip';
import { describe, expect, it } from 'vitest';

// Issue 18: one code per mistake, NUL refused in what C reads as a string. Both failed before:
// open(-1) gave ERR_INVALID_ARG_VALUE (core's deviceId gives ERR_OUT_OF_RANGE), and a NUL in
// options.name reached hiprtc, which cut the name there.
describe('hip: arguments checked as everywhere', () => {
  it('open(-1): RangeError ERR_OUT_OF_RANGE, as deviceId("hip", -1)', async () => {
    await expect(backend.open(-1)).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
  });

  it('compile() refuses a file name holding a NUL before anything runs', async () => {
    await expect(compile('__global__ void k() {}', { name: 'a\0b.hip' })).rejects.toMatchObject({
      code: 'ERR_INVALID_ARG_VALUE',
      message: expect.stringContaining('options.name'),
    });
  });

  it('compile() and startCompiler() refuse an option they do not take (a misspelt one is not ignored)', async () => {
    await expect(compile('__global__ void k() {}', { arhc: 'gfx90a' } as never)).rejects.toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_VALUE',
      message:
        'devexit: compile() options has an unknown option "arhc"; it takes arch, options, name, signal',
    });
    expect(() => startCompiler({ idlePollMs: 5 } as never)).toThrow(
      'devexit: startCompiler() options has an unknown option "idlePollMs"; it takes idlePollUs',
    );
  });
});
