export { BACKEND_NAMES, type LoadedBackend, loadBackend } from './backends.js';
export { DEMO_PATHS, type DemoCell, type DemoRow, demo, formatDemo } from './demo.js';
export { type DoctorReport, doctor, formatDoctor } from './doctor.js';
