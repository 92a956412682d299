// The few DOM names @webgpu/types uses, for this package's own build: its tsconfig has no DOM lib
// (TypeScript 7's DOM lib declares WebGPU names of its own, which @webgpu/types would declare
// again), and a .d.ts here is never published (its declarations name no DOM type).
type BufferSource = ArrayBufferView | ArrayBuffer;
type PredefinedColorSpace = 'display-p3' | 'srgb';
interface EventInit {
  bubbles?: boolean;
  cancelable?: boolean;
  composed?: boolean;
}
interface AddEventListenerOptions extends EventListenerOptions {
  once?: boolean;
  passive?: boolean;
  signal?: AbortSignal;
}
type EventListenerOrEventListenerObject = ((event: Event) => void) | { handleEvent(event: Event): void };
interface ImageBitmap {
  readonly width: number;
  readonly height: number;
}
interface ImageData {
  readonly width: number;
  readonly height: number;
}
interface HTMLImageElement {
  readonly width: number;
}
interface HTMLVideoElement {
  readonly videoWidth: number;
}
interface HTMLCanvasElement {
  readonly width: number;
}
interface VideoFrame {
  readonly codedWidth: number;
}
interface OffscreenCanvas {
  readonly width: number;
}
