// Strict TypeScript consumer (compiled without skipLibCheck, NodeNext and bundler): core's
// types, cpu's backend, a typed launch; run after the NodeNext build.
import type { Backend, Device, DeviceBuffer, KernelArg, ProbeResult, Queue } from '@devexit/core';
import { isExiting } from '@devexit/core';
import { backend } from '@devexit/cpu';
import { type GuardState, guardState } from '@devexit/native';
import { type AddonSpec, loadedAddons } from '@devexit/native/loader';

const cpu: Backend = backend;
const guard: GuardState = guardState();
// The subpaths' types (the package has no exports map: typesVersions names them). gyp's flags are
// for building from source, with node-addon-api installed: types only here.
const spec: Pick<AddonSpec, 'name'> = { name: 'devexit_native' };
const flags: typeof import('@devexit/native/gyp')['cflags_cc'] = '-std=c++17';
if (!loadedAddons()[spec.name] || !flags) throw new Error('@devexit/native subpaths');
const probe: ProbeResult = await cpu.probe();
if (!probe.available) throw new Error(`cpu unavailable: ${probe.reason}`);

const n = 256;
const device: Device = await cpu.open(0);
const q: Queue = device.queue();
const x: DeviceBuffer = q.alloc(4 * n);
const out: DeviceBuffer = q.alloc(4);
q.write(x, new Float32Array(n).fill(2));
const args: readonly KernelArg[] = [x, out, { u32: n }];
q.launch(device.kernel('sum_f32'), n, args);
const sum = new Float32Array((await q.read(out)).slice().buffer)[0];
await device.close();
if (sum !== 2 * n || isExiting()) throw new Error(`sum_f32 gave ${sum}`);
console.log(JSON.stringify({ app: 'ts', sum, devices: probe.devices, tls: guard.tls.armed }));
