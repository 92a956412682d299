export { type Command, DEMO_USAGE, DOCTOR_USAGE, parseCommandLine, USAGE } from './args.js';
export { BACKEND_NAMES, type LoadedBackend, loadBackend, probeBackend } from './backends.js';
export type { ChildResult } from './child.js';
export {
  DEMO_PATHS,
  type DemoCell,
  type DemoResult,
  type DemoRow,
  demo,
  summarizeRuns,
} from './demo.js';
export { describeCell, formatDemo } from './demoFormat.js';
export { type DemoTarget, demoTargets } from './demoTargets.js';
export { type BackendReport, type DoctorReport, doctor, formatDoctor, type NativeReport } from './doctor.js';
export { type Malformed, StderrSplitter } from './output.js';
export { type ProcessReport, type RunOptions, type RunReport, runProgram, type Verdict } from './run.js';
export { describeExitStart, formatRun, mainProcess } from './runFormat.js';
export { type Timeline, timelineOf } from './timeline.js';
export { runTimelineHtml, runTimelineSvg, timelinePage } from './timelineHtml.js';
export { type CloseTiming, closeTimings } from './timing.js';
