/**
 * WebGPU's object types as this package's declarations name them: the consumer's own where it has
 * them (TypeScript 6+'s DOM lib declares them, and so does @webgpu/types), else opaque. This
 * package's types never bring @webgpu/types into a consumer: against the DOM lib of TypeScript 7
 * (and 6.0) it declares the same names again (182 errors with @webgpu/types 0.1.74).
 */
type Global<K extends string> = typeof globalThis extends { [P in K]: { prototype: infer T } }
  ? T
  : { readonly __webgpu: K };

export type GPU = Global<'GPU'>;
export type GPUAdapter = Global<'GPUAdapter'>;
export type GPUDevice = Global<'GPUDevice'>;
export type GPUBuffer = Global<'GPUBuffer'>;
export type GPUBindGroup = Global<'GPUBindGroup'>;
export type GPUBindGroupLayout = Global<'GPUBindGroupLayout'>;
export type GPUComputePipeline = Global<'GPUComputePipeline'>;
