// Strict TypeScript consumer of @devexit/cli's types (compiled without skipLibCheck under
// TypeScript 5.9 and 7): runs a program under `doctor run` and reads its report.
import { formatRun, type RunReport, runProgram } from '@devexit/cli';

const report: RunReport = await runProgram({
  command: [process.execPath, '-e', 'process.exit(3)'],
  timeoutMs: 60_000,
  exitTimeoutMs: 10_000,
});
if (report.verdict !== 'exit-code' || report.code !== 3) throw new Error(formatRun(report));
console.log(JSON.stringify({ app: 'ts', cli: report.verdict, code: report.code }));
