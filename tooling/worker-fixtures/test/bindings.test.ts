import { join } from 'node:path';
import { runChild } from '@devexit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeModel } from './workerRuns.js';

// What the fixtures stand on, on the main thread (where nothing is torn down mid-call): the
// stand-in binding's calls take their time and return values, the model writer's model runs in
// onnxruntime-node and computes what it should, the fixture refuses a bad command line.

interface Result {
  ms: number;
  values: Float64Array;
  done?: boolean;
}
const standin = require('../fixtures/standinBinding.cjs') as {
  syncWork(ms: number): Result;
  asyncWork(ms: number): Promise<Result>;
  streamWork(ms: number, onChunk: (chunk: Result) => void): void;
};

const values = (ms: number) => Float64Array.from([ms, 2 * ms, 3 * ms, 4 * ms]);

describe('stand-in binding', () => {
  it('syncWork(ms) blocks for ms, then returns values', () => {
    const t = performance.now();
    const r = standin.syncWork(50);
    expect(performance.now() - t).toBeGreaterThanOrEqual(49);
    expect(r).toEqual({ ms: 50, values: values(50) });
  });

  it('asyncWork(ms) returns a Promise at once, resolved after ms', async () => {
    const t = performance.now();
    const p = standin.asyncWork(50);
    expect(p).toBeInstanceOf(Promise);
    expect(await p).toEqual({ ms: 50, values: values(50) });
    expect(performance.now() - t).toBeGreaterThanOrEqual(49);
  });

  it('streamWork(ms, onChunk) streams a chunk every 5 ms, the last with done: true', async () => {
    const chunks: Result[] = [];
    await new Promise<void>((resolve) =>
      standin.streamWork(20, (c) => {
        chunks.push(c);
        if (c.done) resolve();
      }),
    );
    expect(chunks.map((c) => [c.ms, c.done])).toEqual([
      [5, false],
      [10, false],
      [15, false],
      [20, true],
    ]);
  });

  it('refuses a bad duration or callback before doing anything', () => {
    expect(() => standin.syncWork('5' as unknown as number)).toThrow(TypeError);
    expect(() => standin.syncWork(-1)).toThrow(RangeError);
    expect(() => standin.asyncWork(Number.NaN)).toThrow(RangeError);
    expect(() => standin.streamWork(60_001, () => {})).toThrow(RangeError);
    expect(() => standin.streamWork(5, undefined as unknown as () => void)).toThrow(TypeError);
  });
});

describe('onnxruntime-node with the written model', () => {
  let model: ReturnType<typeof writeModel>;
  beforeAll(() => {
    model = writeModel();
  });
  afterAll(() => model?.remove());

  it('runs four 768×768 MatMuls in a chain: ones in, 1·2·3·4 = 24 out', async () => {
    const ort = require('onnxruntime-node') as typeof import('onnxruntime-node');
    const session = await ort.InferenceSession.create(model.file, { intraOpNumThreads: 1 });
    const x = new ort.Tensor('float32', new Float32Array(768 * 768).fill(1), [768, 768]);
    const { Y } = await session.run({ X: x });
    await session.release();
    expect(Y?.dims).toEqual([768, 768]);
    const data = Y!.data as Float32Array;
    expect(Math.min(...data.subarray(0, 1000))).toBeCloseTo(24, 3);
    expect(Math.max(...data.subarray(data.length - 1000))).toBeCloseTo(24, 3);
  });
});

describe('fixtures/main.cjs', () => {
  it.each([
    [['--binding', 'sqlite', '--ending', 'exit'], /--binding must be one of/],
    [['--binding', 'standin-sync', '--ending', 'later'], /--ending must be one of/],
    [['--binding', 'onnx', '--ending', 'exit'], /--binding onnx needs --model/],
    [
      ['--binding', 'standin-sync', '--ending', 'exit', '--workers', '0'],
      /--workers must be an integer 1..64/,
    ],
    [['--binding', 'standin-sync', '--ending', 'exit', '--mode', 'sometimes'], /--mode must be one of/],
  ])('refuses %j with exit code 2', async (args, message) => {
    const r = await runChild({
      script: join(__dirname, '..', 'fixtures', 'main.cjs'),
      args,
      timeoutMs: 10_000,
    });
    expect({ code: r.code, message: message.test(r.stderr), started: r.stdout }).toEqual({
      code: 2,
      message: true,
      started: '',
    });
  });
});
